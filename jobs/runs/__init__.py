"""The runs library: one path from a recipe or command to a Submission, hand-off, listing, follow, export, run records; it never prints."""
