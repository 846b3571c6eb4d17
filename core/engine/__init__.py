"""The engine: runner, approval, executor, refresh, marks, signing, approvers, the audit chain's verification, policy."""
