"""The results store: every judged measurement saved the moment it completes."""
