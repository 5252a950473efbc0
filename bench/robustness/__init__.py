"""The robustness scenarios (load, chaos, slowloris, hygiene, ``kill -9``) and their figures.
``bench/soak.py`` and ``bench/kill9_lag.py`` run them with big numbers; tests/robustness runs
them with CI-sized ones and checks what they found."""
