"""The course itself: the lesson manifest and kit paths, workspaces, rendering, the template repo, git.

Imports grader.errors only.
"""
