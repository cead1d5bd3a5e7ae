"""A Ray head simulator for devcluster's simulated runtime: a dashboard with no Ray behind it.

Under `--runtime simulated` nothing runs, so a RayCluster's head would answer no dashboard call
and no RayJob or RayService could get past its first Ray question. This package gives every
simulated head pod a *simulated* Ray dashboard (the Jobs and Serve HTTP API KubeRay uses: J7,
J26 and S4–S6 in docs/kuberay-parity.md) and every simulated `ray job submit` container a
simulated submitter, so whole lifecycles run by the hundred on one machine. It is a test double
for Ray, checked against a real Ray head by `tests/devcluster/test_ray_simulator_contract.py`
(same calls, same status codes, same JSON shapes); everything else about devcluster stays real.

Conventions (documented in `jobs.plan`), chosen so that an entrypoint behaves the same under
real Ray: `sleep N` makes the job run N seconds (summed over all of them), `exit N` or
`sys.exit(N)` makes it end FAILED with that exit code, `echo TEXT` puts TEXT in its logs.
Serve applications turn RUNNING `serve_delay` seconds after they are applied.

A head's jobs and Serve state live with its pod (in the pod's directory): deleting the pod
loses them, as a head without GCS fault tolerance does, while a devcluster restart, which
real heads would not notice, keeps them, and submitters that were running carry on without
submitting again. GCS fault tolerance (state surviving a head pod's replacement) is not
simulated.
"""
