"""Dataset preparation: public datasets turned into the parquet rows the GRPO frameworks read."""
