"""Which encoder and decoder a ``PartsConfig`` plugs into the skeleton (qgen/model/seq2seq.py): the
data-to-text seeds' parts, assembled per seed in qgen/model/roberti.py (seed 002), qgen/model/zhang.py
(seed 003) and qgen/model/checklist.py (seed 004)."""
from __future__ import annotations

import torch
from torch import nn

from qgen.model import zhang
from qgen.model.checklist import AgendaEncoder, ChecklistDecoder
from qgen.model.config import ModelConfig, PartsConfig
from qgen.model.roberti import RobertiDecoder, RobertiSwitchEncoder


def uses_parts(cfg: ModelConfig) -> bool:
    """Whether ``cfg`` asks for any part other than the skeleton's (a PartsConfig at its defaults does not)."""
    return isinstance(cfg, PartsConfig) and (cfg.encoder != "bigru" or cfg.decoder != "skeleton")


def build_encoder(cfg: PartsConfig) -> tuple[nn.Module, int]:
    """The encoder and the width of its annotations (the decoder's memory)."""
    if cfg.encoder == "agenda":
        return AgendaEncoder(cfg), cfg.embedding_dim
    if cfg.encoder == "roberti_switch":
        return RobertiSwitchEncoder(cfg), cfg.hidden_size
    return zhang.build_encoder(cfg)


def build_decoder(cfg: PartsConfig, memory_dim: int) -> nn.Module:
    if cfg.decoder == "checklist":
        return ChecklistDecoder(cfg)
    if cfg.decoder == "roberti":
        return RobertiDecoder(cfg)
    return zhang.build_decoder(cfg, memory_dim)


def initialise(model: nn.Module, cfg: ModelConfig) -> None:
    """Every parameter from U(-a, a) when ``init_uniform`` is set (dl4mt: 0.08; Kiddon et al.: 0.35);
    an embedding's padding row stays zero, as nn.Embedding leaves it (a padded agenda item sums to 0)."""
    scale = getattr(cfg, "init_uniform", 0.0)
    if scale > 0:
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.uniform_(-scale, scale)
            for module in model.modules():
                if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                    module.weight[module.padding_idx].zero_()
