"""The JAX engines' tests compare with the numpy environments bit for bit (under ``jax.enable_x64``). XLA's CPU
compiler contracts ``a * b + c`` into one fused multiply-add, which rounds once where numpy rounds twice: the
last bit of a float64 can differ. Capping the instruction set at AVX (no FMA instructions) makes XLA round as
numpy does; set here, before JAX starts its CPU backend. (Users' runs keep FMA: only the last float64 bit of a
number is at stake, see the engines' docstrings.)"""

from __future__ import annotations

import os

if "xla_cpu_max_isa" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_max_isa=AVX").strip()
