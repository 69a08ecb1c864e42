"""Judge robustness, shared by the instruments: re-judge a sample, put judge noise in the
interval (:mod:`~study.judge_robustness.service`) and say so in every report
(:mod:`~study.judge_robustness.report`)."""
