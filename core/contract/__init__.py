"""The contracts: what the engine asks of storage and of the world, and what a back-end hands the core."""
