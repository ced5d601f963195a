"""Reading and writing qgen files (Parquet)."""
