"""Seed 003, Zhang et al. (2018), "Attention Regularized Sequence-to-Sequence Learning for E2E NLG
Challenge": which parts the skeleton (qgen/model/seq2seq.py) plugs in for a ``PartsConfig``.

    encoder   "caencoder"    -> qgen.model.caencoder.CAEncoder (Eq. 1-4; annotations hidden_size wide)
              "bigru_concat" -> the skeleton's Encoder, one layer of hidden_size a direction, no dropout:
                                dl4mt's RNNsearch encoder (annotations 2 hidden_size wide), the baseline
    decoder   "cgru"         -> qgen.model.cgru.ConditionalGRUDecoder (Eq. 5-8: s_0 from the mean
                                annotation, conditional GRU, MLP attention, readout layer)
    loss      "attreg"       -> qgen.model.losses.attention_regulariser (Eq. 9), weight 1
    init      init_uniform   -> every parameter from U(-a, a) (dl4mt: 0.08)

The registry's rows: ``zhang_baseline``, ``zhang_caencoder`` ("Our") and ``zhang_caencoder_attreg``
("Our+AttReg") in qgen.model.config.VARIANTS.

Choices where the spec leaves room (each a comment where it is made):
- the baseline's encoder is dl4mt's (1000 units a direction, concatenated), not the skeleton's;
- dropout (0.2) acts on the readout layer only: the encoders here get none;
- the source's appended EOS comes from the data (qgen.datasets.e2e_bpe appends "</s>"), not the model;
- validation loss is the NLL alone: the loss terms are added in training mode only, so the three
  rows' validation figures compare;
- L_att is summed per sentence like the NLL and both are divided by the batch's target tokens (the
  training loop's normalisation; the paper averages per sentence): the same relative weight, 1;
- one vocabulary per side, as the training loop builds them, not dl4mt's joint one: with separate
  embedding tables the only difference is the output layer's rows for units never seen in a target
  (E2E train: 1,064 joint types, 1,059 target types);
- U(-0.08, 0.08) is the paper's and trains at large sizes (310/500 on 1,000 E2E pairs: validation NLL
  3.29 after 50 updates), but at toy sizes (32/64) it stays near the unigram NLL (4.5) for 400 updates
  where torch's defaults reach 2.5: pilots use init_uniform 0.
"""
from __future__ import annotations

from dataclasses import replace

from torch import nn

from qgen.model.caencoder import CAEncoder
from qgen.model.cgru import ConditionalGRUDecoder
from qgen.model.config import PartsConfig
from qgen.model.decoder import Decoder
from qgen.model.encoder import Encoder


def build_encoder(cfg: PartsConfig) -> tuple[nn.Module, int]:
    """The encoder and the width of its annotations (the decoder's memory)."""
    if cfg.encoder == "caencoder":
        return CAEncoder(cfg), cfg.hidden_size
    if cfg.encoder == "bigru_concat":
        # The skeleton's Encoder has hidden_size / 2 a direction: ask it for 2 * hidden_size so each
        # direction has hidden_size (dl4mt's d_h), one layer, and no dropout (dl4mt drops the readout only).
        return Encoder(replace(cfg, hidden_size=2 * cfg.hidden_size, num_layers=1, dropout=0.0)), 2 * cfg.hidden_size
    return Encoder(cfg), cfg.hidden_size


def build_decoder(cfg: PartsConfig, memory_dim: int) -> nn.Module:
    if cfg.decoder == "cgru":
        return ConditionalGRUDecoder(cfg, memory_dim)
    if memory_dim != cfg.hidden_size:
        raise ValueError("the skeleton's decoder reads annotations of hidden_size: use the cgru decoder")
    return Decoder(cfg)
