"""PROVISIONAL (uncommitted) - replaced by the glicko branch's measured values."""
from service.ratings.glicko2 import Rating

BOT_RATINGS = {"easy": Rating(1200.0, 60.0, 0.06), "standard": Rating(1500.0, 60.0, 0.06),
               "strong": Rating(1650.0, 60.0, 0.06)}
