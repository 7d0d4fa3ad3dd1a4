"""libattn's vLLM 0.33.0 conformance lane (issue 16): vLLM's own Python against libattn on the
same seeded random batches. Run it with scripts/conformance.sh (or ``python -m conformance``
from the repository root with the vLLM venv's Python). Modules:

- ``vllm_env``: vLLM's CPU platform, the version pin, real VllmConfig objects (shared with
  bench/vllm_compare.py)
- ``compare``: value comparison and the flattening of vLLM's metadata objects (shared)
- ``stand_ins``: the InputBatch/SchedulerOutput stand-ins the reorder reads (shared)
- ``batches``: the seeded random batch generator; ``sides``: a batch as each side's input
- ``item``, ``utility_items``, ``builder_items``, ``patches``, ``extensions``: what is compared
- ``runner``, ``table``, ``cli``: the run, the shrinking of a failing batch, the table
"""
