"""qgen: question generation from logical forms, for synthesising KBQA training data."""
