"""theory.py -- capacity formulas, bounds and predictions, each with its source named.

Sources: [paper A] Nichani, Lee, Bietti (ICLR 2025); [paper A figure] a reference line drawn
by its authors; [paper B] Vural, Bietti, Soltanolkotabi, Wu (ICLR 2026); [ours] derived in
this project for the concrete model it fixes, and checked against its simulations.
"""
import math

import numpy as np


# ----------------------------------------------------------------------------- counting and parameters

def transformer_params(d, H, dh, m):
    """[paper A] Parameters of the one-layer transformer without embeddings: 4 H dh d + 2 m d."""
    return 4 * H * dh * d + 2 * m * d


def fact_bits(S, R, D):
    """[counting] Information in an arbitrary fact table: S R log2 D bits."""
    return S * R * math.log2(D)


def map_bits(N, M):
    """[counting] Information in an arbitrary map of N items into M classes: N log2 M bits."""
    return N * math.log2(M)


# ----------------------------------------------------------------------------- paper A, memories


# ----------------------------------------------------------------------------- paper B, retrieval


def mean_attention(q, d, L, z2=1.0, n_nodes=24):
    """[ours] Mean-field attention on the informative position, averaged over answer tokens."""
    x, wx = _normal_nodes(n_nodes)
    p, _ = attention_meanfield(q, d, L, q / math.sqrt(d) * x, z2)
    return float(wx @ p)
