"""The operator's chores: doctor, maintenance, copying a store."""
