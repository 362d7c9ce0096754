"""One array-API-generic function, run on numpy and on lazytensor, with the results compared.

`kmeans` below knows nothing about either library: it asks its input for its namespace
(`x.__array_namespace__()`, the Python Array API standard) and uses only standard functions.

Run: python examples/array_api_demo.py
"""
import numpy as np

import lazytensor as lt


def kmeans(points, centers, steps: int):
    """Lloyd's k-means: assign each point to its nearest center, move centers to their means."""
    xp = points.__array_namespace__()
    k = centers.shape[0]
    for _ in range(steps):
        # squared distances (n, k) via |p|^2 - 2 p.c + |c|^2: one matmul and two reductions
        distances = (xp.sum(points * points, axis=1)[:, None] - 2 * (points @ xp.matrix_transpose(centers))
                     + xp.sum(centers * centers, axis=1)[None, :])
        nearest = xp.argmin(distances, axis=1)
        member = xp.astype(nearest[:, None] == xp.arange(k)[None, :], points.dtype)   # (n, k) one-hot
        counts = xp.sum(member, axis=0)
        sums = xp.matrix_transpose(member) @ points                                    # (k, d)
        # a center with no points stays where it is
        centers = xp.where(counts[:, None] > 0, sums / xp.maximum(counts, 1)[:, None], centers)
    inertia = xp.sum(xp.min(distances, axis=1))
    return centers, nearest, inertia


def main() -> None:
    rng = np.random.default_rng(0)
    blobs = [rng.normal(loc, 0.4, size=(200, 2)) for loc in ([0, 0], [4, 1], [1, 5])]
    points = np.concatenate(blobs).astype(np.float32)
    start = points[[0, 250, 450]]

    np_centers, np_labels, np_inertia = kmeans(points, start, steps=10)
    lt_centers, lt_labels, lt_inertia = kmeans(lt.asarray(points), lt.asarray(start), steps=10)

    print("numpy centers:\n", np.round(np_centers, 4))
    print("lazytensor centers:\n", np.round(lt_centers.numpy(), 4))
    same_labels = np.array_equal(np_labels, lt_labels.numpy())
    centers_agree = np.allclose(np_centers, lt_centers.numpy(), rtol=1e-4, atol=1e-4)
    inertia_agrees = np.isclose(float(np_inertia), lt_inertia.item(), rtol=1e-4)
    print(f"labels identical: {same_labels}; centers agree: {centers_agree}; inertia agrees: {inertia_agrees}")
    print("kernels launched by lazytensor:", lt.stats()["kernels_launched"])
    if not (same_labels and centers_agree and inertia_agrees):
        raise SystemExit("numpy and lazytensor disagree")


if __name__ == "__main__":
    main()
