"""Crossplane, its API server and the workload clusters' controllers, played once for everyone.

Every offline consumer (the unit, hardening and gRPC tests, the benchmarks,
the render walk and the e2e drivers) needs the same things and takes them
from here, so that they cannot drift apart:

* ``sim.catalog``: the function registry and the examples;
* ``sim.pipeline``: Crossplane's side of a call (request, requirements
  resolved, the status it writes to an XR);
* ``sim.controllers``: observation, the API server, provider-kubernetes and
  the workload clusters' controllers;
* ``sim.pki``: the certificates those controllers issue (throwaway CAs and
  leaves), for anyone who needs one;
* ``sim.loop``: the one loop (``Walk``: desired resources observed, pass
  after pass) and when a walk stops (``until_settled``).
"""
