"""A user's script with misspelt attributes, each on a line marked "typo": mypy must report
every one (tests/test_user_types.py; never run)."""
import numpy as np

import ffcode
from ffcode import GF, MDS
from ffcode.learn import (LinearRegression, LogisticRegression,
                          MultiTaskLogisticRegression)

F = GF(2**31 - 1)
A, x = F.random((40, 8), seed=1), F.random(8, seed=2)

with ffcode.Cluster(4) as cluster:
    y, report = cluster.run(MDS(F, 2, 4), A, x)
    print(report.totl)                                              # typo
    future = cluster.submit(MDS(F, 2, 4), A, x)
    print(future.result().nope)                                     # typo
    print(future.result()[1].ranks)                                 # typo
    print(future.reprt)                                             # typo
    rng = np.random.default_rng(0)
    features, target = rng.normal(size=(60, 3)), rng.normal(size=60)
    model = LinearRegression(iterations=5).fit(features, target, cluster=cluster)
    print(model.coeff_)                                             # typo
    classifier = LogisticRegression().fit(features, target > 0, cluster=cluster)
    print(classifier.clases_)                                       # typo
    tasks = MultiTaskLogisticRegression().fit(features, target > 0, cluster=cluster)
    print(tasks.multilable_)                                        # typo
