"""Data: perturbation schedules, the chunked step store, training windows, value labels, generation.

Modules (imported on demand, so ``import simdist_core.data`` stays cheap):

* ``perturbation``  ``PerturbationConfig``, ``PerturbationSchedule`` (noise bursts 1-50 steps, gaps 25-500,
  per-joint std 0.05-2.5 per episode, 2.5 % of episodes clean), ``apply_noise``.
* ``chunks``        on-disk chunk format and ``ChunkWriter`` (atomic, checksummed, append-only).
* ``dataset``       ``Dataset`` (memory-mapped reader, verification, episodes, ``gather``, ``checksum``).
* ``sampler``       ``WindowSampler`` (the ``WindowBatch`` training contract), ``fit_normalizer_stats``.
* ``value_labels``  expert value function fitted on clean expert rollouts (safetensors + JSON).
* ``rollout``       one recorded generation episode (row layout of generated data).
* ``generate``      ``simdist generate`` (sharded, multi-process, resumable).
* ``bench``         ``simdist bench generate``.
* ``history``       online ``ObservationHistory`` (same window layout as the sampler).
"""
