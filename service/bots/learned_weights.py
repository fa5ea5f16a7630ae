"""The fitted weights of the strong bot's discard value, in the order of
learned_features.DISCARD_NAMES: ridge regression (penalty 10) within each decision, on 6,536
discard decisions of 1,200 seeded first hands (bench/learn_discards.py has how, and how to fit
them again)."""
DISCARD_WEIGHTS = (-5.9368, 0.2976, 0.2653, 3.4036, 5.6082, 3.856, -8.2555, 7.1141, -0.576, -2.7289, 0.9073,
                   3.1244, 0.1987, -0.2031, -0.2869)
