"""The classroom: the class board and relay, bulk grading, the autograder bundle.

Imports grader.course and grader.grading.
"""
