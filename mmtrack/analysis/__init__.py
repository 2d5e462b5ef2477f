"""Analysis over plain records: compare two sets of measurements, detect change points.

Nothing here imports the store; the commands fetch records and hand them over.
"""
