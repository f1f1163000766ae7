"""Masked-LM training step time: the vocabulary head at the masked positions only (bertkit's
mlm-adapt) against the same model as transformers runs it (the head at every position).

The model is the from-scratch BERT of configs/ja/local/pretrain.yaml (4 layers, 256 wide, 1,024
feed-forward, 12,000-entry vocabulary) unless --hidden/--layers/--vocab say otherwise; a batch is
32 blocks of 128 tokens with 15% of the positions masked, the way a pre-training step sees it. One
step is forward, backward and an AdamW update. Both models start from the same weights and are
timed alternately, R rounds of S steps each, in one process; the median step time of each is
reported, with ratio = peer step time / bertkit step time (>1: bertkit is faster). The losses
of the two must agree at every step (they compute the same number).

Usage: python bench/mlm_speed.py [--rounds 3] [--steps 4] [--hidden 256] [--layers 4] [--vocab 12000]
Writes bench/results/mlm_speed.json and prints a table.
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import save, table

BATCH, LENGTH, SHARE = 32, 128, 0.15


def main() -> None:
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from bertkit.tasks.mlm.masked_positions import predict_masked_only

    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=12000)
    args = parser.parse_args()

    config = BertConfig(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=max(1, args.hidden // 64),
        intermediate_size=4 * args.hidden,
        max_position_embeddings=LENGTH,
    )
    torch.manual_seed(0)
    peer = BertForMaskedLM(config)
    ours = BertForMaskedLM(config)
    ours.load_state_dict(peer.state_dict())
    predict_masked_only(ours)
    runs = {}
    for name, model in (("transformers (head at every position)", peer), ("bertkit (head at masked positions)", ours)):
        model.train()
        runs[name] = {
            "model": model,
            "optimizer": torch.optim.AdamW(model.parameters(), lr=1e-4),
            "times": [],
            "losses": [],
        }
    generator = torch.Generator().manual_seed(1)
    batches = []
    for _ in range(args.steps):
        ids = torch.randint(5, args.vocab, (BATCH, LENGTH), generator=generator)
        labels = torch.where(torch.rand(ids.shape, generator=generator) < SHARE, ids, torch.tensor(-100))
        batches.append((ids, labels))
    for _ in range(args.rounds):
        for run in runs.values():
            for ids, labels in batches:
                started = time.perf_counter()
                torch.manual_seed(2)  # the same dropout for both
                loss = run["model"](input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels).loss
                loss.backward()
                run["optimizer"].step()
                run["optimizer"].zero_grad()
                run["times"].append(time.perf_counter() - started)
                run["losses"].append(loss.item())
    peer_run, our_run = runs.values()
    gap = max(abs(a - b) for a, b in zip(peer_run["losses"], our_run["losses"], strict=True))
    if gap > 1e-3:
        raise SystemExit(f"the two models' losses differ by {gap}: the masked-only head is not the same computation")
    peer_step = statistics.median(peer_run["times"])
    rows = []
    for name, run in runs.items():
        step = statistics.median(run["times"])
        rows.append(
            {
                "recipe": name,
                "median step s": round(step, 3),
                "tokens/s": round(BATCH * LENGTH / step),
                "vs peer": round(peer_step / step, 2),
            }
        )
    print(table(rows, ["recipe", "median step s", "tokens/s", "vs peer"]))
    print(f"largest loss difference over {len(peer_run['losses'])} steps: {gap:.2e}")
    settings = {
        **vars(args),
        "batch": BATCH,
        "length": LENGTH,
        "masked_share": SHARE,
        "threads": torch.get_num_threads(),
    }
    print(f"written to {save('mlm_speed', {'settings': settings, 'rows': rows, 'largest_loss_difference': gap})}")


if __name__ == "__main__":
    main()
