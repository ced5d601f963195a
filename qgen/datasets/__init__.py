"""Dataset loaders: each yields RawExample records for one dataset in ../shared/datasets."""
