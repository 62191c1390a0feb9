"""Rover: a small coding agent, grown one tool per lesson."""
