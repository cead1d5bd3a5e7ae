"""The README's pictures and the script that makes them (`python -m docs.screenshots`)."""
