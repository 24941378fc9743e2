"""A CuPy kernel source the program put together from pieces (`HEAD + r'''...'''`) still
names the lines of the Python file where each piece is written."""

from __future__ import annotations

from consan.cupy_build import map_pieces

PROGRAM = '''HEAD = r"""
__device__ int twice(int x) {
    return 2 * x;
}
"""
KERNEL = HEAD + r"""
extern "C" __global__ void k(int* out) {
    __shared__ int s[32];
    s[threadIdx.x] = twice(threadIdx.x);
    out[threadIdx.x] = s[31 - threadIdx.x];
}
"""
'''


def test_each_piece_names_its_own_lines(tmp_path):
    f = tmp_path / "prog.py"
    f.write_text(PROGRAM)
    head = "\n__device__ int twice(int x) {\n    return 2 * x;\n}\n"
    kernel = ('\nextern "C" __global__ void k(int* out) {\n    __shared__ int s[32];\n'
              "    s[threadIdx.x] = twice(threadIdx.x);\n"
              "    out[threadIdx.x] = s[31 - threadIdx.x];\n}\n")
    got = map_pieces(head + kernel, (str(f),))
    src = (head + kernel).split("\n")
    text = PROGRAM.split("\n")
    for line in (3, 9, 10):  # `return`, `s[...] = twice`, `out[...] =`
        path, at = got[line]
        assert path == str(f) and text[at - 1] == src[line - 1], (line, at)


def test_a_source_written_nowhere_maps_nothing(tmp_path):
    f = tmp_path / "prog.py"
    f.write_text("print('no kernel here')\n")
    assert map_pieces("extern \"C\" __global__ void k() {\n}\n", (str(f),)) == {}
