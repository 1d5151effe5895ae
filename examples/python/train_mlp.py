"""A PyTorch training script written with raw tensors: an MLP classifier with cross_entropy,
a manual SGD step under no_grad (or torch.optim.AdamW with a cosine schedule), zero_() on the
grads and slicing for batches. It runs on Kiln unchanged except for its import
(`import kiln as torch`), and on PyTorch with `import torch`: tests/python/test_against_torch.py
runs both and compares the losses step by step.

    python examples/python/train_mlp.py                 # on Kiln, eagerly
    python examples/python/train_mlp.py --compile       # the loss and its backward compiled
    python examples/python/train_mlp.py --optim adamw   # torch.optim.AdamW and a schedule
"""

import argparse
import random


def make_data(torch, n=512, features=20, classes=5, seed=0):
    # Python's own generator, so that Kiln and PyTorch start from the same numbers.
    rng = random.Random(seed)
    x = torch.tensor([[rng.gauss(0.0, 1.0) for _ in range(features)] for _ in range(n)])
    y = torch.tensor([rng.randrange(classes) for _ in range(n)])
    return x, y


def init_params(torch, features=20, hidden=64, classes=5, seed=1):
    rng = random.Random(seed)

    def weight(rows, cols):
        scale = (2.0 / rows) ** 0.5
        return torch.tensor([[rng.gauss(0.0, scale) for _ in range(cols)] for _ in range(rows)],
                            requires_grad=True)

    return [weight(features, hidden), torch.zeros(hidden, requires_grad=True),
            weight(hidden, classes), torch.zeros(classes, requires_grad=True)]


def train(torch, steps=30, batch=64, lr=0.1, compile=False, optim="sgd"):
    x, y = make_data(torch)
    w1, b1, w2, b2 = params = init_params(torch)
    opt = sched = None
    if optim == "adamw":
        opt = torch.optim.AdamW(params, lr=lr / 10, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)

    def loss_fn(xb, yb):
        h = torch.relu(xb @ w1 + b1)
        logits = h @ w2 + b2
        return torch.nn.functional.cross_entropy(logits, yb)

    step = torch.compile(loss_fn) if compile else loss_fn
    losses = []
    for i in range(steps):
        start = (i * batch) % x.shape[0]
        xb, yb = x[start:start + batch], y[start:start + batch]
        loss = step(xb, yb)
        loss.backward()
        if opt is not None:
            opt.step()
            opt.zero_grad()
            sched.step()
        else:
            with torch.no_grad():
                for p in params:
                    p -= lr * p.grad
                    p.grad.zero_()
        losses.append(loss.item())
    return losses, step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--compile", action="store_true", help="compile the loss and backward")
    parser.add_argument("--optim", choices=["sgd", "adamw"], default="sgd",
                        help="a manual SGD step (default) or torch.optim.AdamW with a schedule")
    args = parser.parse_args()
    import kiln as torch
    losses, step = train(torch, steps=args.steps, compile=args.compile, optim=args.optim)
    for i in range(0, len(losses), 10):
        print(f"step {i:3d}  loss {losses[i]:.6f}")
    print(f"step {len(losses) - 1:3d}  loss {losses[-1]:.6f}")
    if args.compile:
        print(f"compiles: {step.stats()['compiles']}")


if __name__ == "__main__":
    main()
