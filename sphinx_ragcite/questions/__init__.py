"""What readers asked: the offline question log, feedback and the author's report."""
