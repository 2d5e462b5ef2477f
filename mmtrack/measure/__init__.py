"""The measurement engine. It imports no store, asv, analysis or publish code."""
