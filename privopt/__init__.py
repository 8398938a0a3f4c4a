"""privopt: optimization modelling for privacy mechanism design."""
