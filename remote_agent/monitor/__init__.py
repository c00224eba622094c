"""Live telemetry on the host: what ``neuron-top`` shows, as protocol v1 ``sample`` events.

One module per source, each turning a tool's output into parts of a sample:
``neuron`` (neuron-monitor's JSON reports), ``nvidia`` (nvidia-smi's streaming CSV)
and ``procfs`` (host CPU and memory, the workload's process tree).  ``sampler``
picks the sources this host has, reads them on a fixed cadence and merges them
into one ``sample`` event per tick; ``digest`` condenses a run's samples into the
Result's ``telemetry`` block.  Stdlib only, Python 3.8+, like the rest of the agent.
"""
