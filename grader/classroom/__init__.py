"""The classroom: the class board and relay, bulk grading, the autograder bundle.

Imports grader.course, grader.grading, grader.boundary (its interface modules) and grader.errors.
"""
