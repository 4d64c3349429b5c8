#!/usr/bin/python3
"""Write the .npy files of tests/artifacts/data/npy/ with NumPy itself, for
libartifacts' .npy reader and writer (tests/artifacts/test_npy.c).

Every value is a formula of its index i (0, 1, ... in C order), which the
test recomputes in C:
  f4.npy         <f4  (2, 3)     i / 4 - 0.5
  f8.npy         <f8  (4,)       i * 1.25 - 3
  f2.npy         <f2  (2, 2)     1.0, -2.0, 0.5, 65504.0
  u1.npy         |u1  (5,)       0, 1, 2, 3, 250
  i1.npy         |i1  (2, 1)     -128, 127
  i4.npy         <i4  (3,)       -7, 0, 2147483647
  i8.npy         <i8  (2,)       -1, 2**40
  be_f4.npy      >f4  (3,)       1.5, -2.25, 1e-3 (big-endian bytes)
  scalar.npy     <f8  ()         3.141592653589793
  empty.npy      <f4  (0, 3)     no elements
  rank4.npy      <f4  (1, 2, 3, 4) i - 12
  v2.npy         <f4  (3,)       i + 0.5, written as format version 2.0
  v3.npy         <f4  (2,)       -i, written as format version 3.0
  fortran.npy    <f4  (2, 3)     Fortran order: to be refused
  bool.npy       |b1  (2,)       a dtype the reader does not take
The bytes numpy.save writes for f4.npy, f2.npy, scalar.npy, empty.npy and
rank4.npy are the writer's reference: art_npy_save must write the same.

Run with Debian's python3-numpy:
    python3 scripts/make-npy-fixtures.py tests/artifacts/data/npy
"""
import os
import sys

import numpy as np


def save(folder, name, array, version=None):
    path = os.path.join(folder, name)
    if version is None:
        np.save(path, array, allow_pickle=False)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, array, version=version,
                                      allow_pickle=False)


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "tests/artifacts/data/npy"
    os.makedirs(folder, exist_ok=True)
    save(folder, "f4.npy",
         (np.arange(6, dtype=np.float32) / 4 - 0.5).reshape(2, 3))
    save(folder, "f8.npy", np.arange(4, dtype=np.float64) * 1.25 - 3)
    save(folder, "f2.npy",
         np.array([[1.0, -2.0], [0.5, 65504.0]], dtype=np.float16))
    save(folder, "u1.npy", np.array([0, 1, 2, 3, 250], dtype=np.uint8))
    save(folder, "i1.npy", np.array([[-128], [127]], dtype=np.int8))
    save(folder, "i4.npy", np.array([-7, 0, 2147483647], dtype=np.int32))
    save(folder, "i8.npy", np.array([-1, 2**40], dtype=np.int64))
    save(folder, "be_f4.npy", np.array([1.5, -2.25, 1e-3], dtype=">f4"))
    save(folder, "scalar.npy", np.float64(3.141592653589793))
    save(folder, "empty.npy", np.zeros((0, 3), dtype=np.float32))
    save(folder, "rank4.npy",
         (np.arange(24, dtype=np.float32) - 12).reshape(1, 2, 3, 4))
    save(folder, "v2.npy", np.arange(3, dtype=np.float32) + 0.5, (2, 0))
    save(folder, "v3.npy", -np.arange(2, dtype=np.float32), (3, 0))
    save(folder, "fortran.npy",
         np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    save(folder, "bool.npy", np.array([True, False]))


if __name__ == "__main__":
    main()
