"""Widgets of the approvals app."""
