"""Screens of the approvals app: the queue, its dialogs, help, compare and trace."""
