"""The ground: what every wing stands on (the state model, the clock, errors, the practice data, safe text, masking, the log)."""
