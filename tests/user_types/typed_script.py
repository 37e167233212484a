"""A user's script, as mypy checks it in tests/test_user_types.py (never run there): a job's
output and report, a future's result, a fitted model's attributes, each of its own type."""
import asyncio
import concurrent.futures

import numpy as np

import ffcode
from ffcode import GF, LCC, MDS, JobFuture, Report
from ffcode.functions import square
from ffcode.learn import (LinearRegression, LogisticRegression,
                          MultiTaskLinearRegression)

F = GF(2**31 - 1)
A, x = F.random((40, 8), seed=1), F.random(8, seed=2)
X = [F.random((4, 8), seed=3), F.random((4, 8), seed=4)]

with ffcode.Cluster(4) as cluster:
    y, report = cluster.run(MDS(F, 2, 4), A, x)
    assert (y == F.matmul(A, x)).all()
    seconds: float = report.total + report.encode
    ranks: int = report.rank
    print(report.summary(), seconds, ranks, y.shape)

    squares, lcc_report = cluster.run(LCC(F, 2, 1, square, 2, 4), X)
    print([s.shape for s in squares], lcc_report.to_json())

    future: JobFuture = cluster.submit(MDS(F, 2, 4), A, x)
    output, job_report = future.result(timeout=60)
    same: Report = job_report
    print(output.sum(), same.cancelled, future.report.job, future.number)
    future.add_done_callback(lambda done: print(done.result()[1].total))
    concurrent.futures.wait([future], timeout=60)

    async def waited() -> float:
        _, awaited = await asyncio.wrap_future(cluster.submit(MDS(F, 2, 4), A, x))
        return awaited.total

    print(asyncio.run(waited()))

    rng = np.random.default_rng(0)
    features, target = rng.normal(size=(60, 3)), rng.normal(size=60)
    model = LinearRegression(iterations=5).fit(features, target, cluster=cluster)
    coefficients: np.ndarray = model.coef_
    print(coefficients, model.intercept_, model.history_[-1], model.predict(features),
          model.score(features, target))
    labels = (target > 0).astype(int)
    classifier = LogisticRegression(iterations=5).fit(features, labels, cluster=cluster)
    print(classifier.classes_, classifier.predict_proba(features).shape)
    tasks = MultiTaskLinearRegression(iterations=5).fit(
        features, np.column_stack([target, -target]), cluster=cluster)
    print(tasks.coef_.shape, tasks.y_mean_, tasks.get_params()["coupling"])
