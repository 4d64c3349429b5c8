"""What the two reference trainings of edgefit-train's comparison share
(scripts/train-numpy.py, scripts/train-torch.py): their options, the
Fashion-MNIST reader and the lines they print. numpy is imported only when
data are read, so train-numpy.py can fix the BLAS thread count first."""
import gzip
import os
import sys


def parse_args(argv):
    opts = {"data": "/usr/share/datasets/fashion-mnist", "epochs": 5,
            "threads": 1, "alpha": 0.1, "batch": 32, "seed": 42}
    i = 1
    while i < len(argv):
        key = argv[i].lstrip("-")
        if key not in opts or i + 1 >= len(argv):
            sys.exit("usage: %s [--data DIR] [--epochs N] [--threads N] "
                     "[--alpha A] [--batch B] [--seed S]" % argv[0])
        opts[key] = type(opts[key])(argv[i + 1])
        i += 2
    return opts


def load(folder, split):
    """Images as float32 in [0, 1], one row each, and labels as int64."""
    import numpy as np
    with gzip.open(os.path.join(folder, split + "-images-idx3-ubyte.gz")) as f:
        raw = f.read()
    count, rows, cols = (int.from_bytes(raw[4 * i:4 * i + 4], "big")
                         for i in (1, 2, 3))
    x = np.frombuffer(raw, np.uint8, count * rows * cols, 16)
    x = x.reshape(count, rows * cols).astype(np.float32) / np.float32(255)
    with gzip.open(os.path.join(folder, split + "-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, count, 8).astype(np.int64)
    return x, y


def print_epoch(epoch, seconds, loss, train_accuracy, test_accuracy):
    print("epoch %d seconds %.4f loss %.4f train_accuracy %.4f "
          "test_accuracy %.4f" % (epoch, seconds, loss, train_accuracy,
                                  test_accuracy), flush=True)


def print_final(seconds, test_accuracy):
    print("final epochs %d mean_epoch_seconds %.4f test_accuracy %.4f"
          % (len(seconds), sum(seconds) / len(seconds), test_accuracy))
