"""stash: a small feed reader. Add feeds, read their entries."""
