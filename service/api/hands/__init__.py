"""/v1/hands: stateless hand analysis."""
