"""The fitted weights of the strong bot's discard value, in the order of
learned_features.DISCARD_NAMES: ridge regression (penalty 10) within each decision, on 33,605
discard decisions of 6,317 seeded first hands (bench/learn_discards.py has how, and how to fit
them again)."""
DISCARD_WEIGHTS = (-0.6188, -0.8848, 1.3858, -4.3457, 20.2607, 13.6693, -9.6817, 8.2753, -1.0459, -0.9974, -5.0415,
                   8.7851, 0.0828, -0.6155, -1.5639, -1.4288, -7.5571, -1.1141, -0.3343, -1.8502, -0.1362)
