#!/usr/bin/env python3
"""Tests of the distillation teacher (tools/data/teacher.py), in the environment scripts/setup-teacher.sh makes:

    target/teacher/venv/bin/python tools/data/test_teacher.py       # about 20 s

Not a CI step: CI has no teacher environment (tools/data/test_data.py checks the teacher stage with a stand-in).
"""

import os
import struct
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import teacher  # noqa: E402
import teacher_data  # noqa: E402


class Teacher(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.teacher = teacher.Teacher()

    def test_the_weights_are_the_pinned_file(self):
        self.assertEqual(self.teacher.sha256, teacher.MODEL_SHA256)
        self.assertTrue(teacher.MODEL_SHA256.startswith("53aa51172d142c89"))

    def test_the_facts_hold(self):
        self.assertEqual(teacher.check(self.teacher), 0)

    def test_rows_are_unit_and_do_not_depend_on_the_batch(self):
        long = "a heavy motor vehicle that carries goods along the road between two distant towns " * 3
        alone = self.teacher.embed(["cat"])
        batched = self.teacher.embed([long, "cat", "kitten"], tokens_per_batch=1 << 20)  # one padded batch
        self.assertLess(float((alone[0] - batched[1]).abs().max()), 1e-5)
        self.assertLess(float((batched.norm(dim=1) - 1).abs().max()), 1e-5)

    def test_the_rows_keep_the_texts_order(self):
        texts = ["a truck", "cat", "an old wooden sailing ship with three masts"]
        together = self.teacher.embed(texts)
        for i, text in enumerate(texts):
            self.assertLess(float((self.teacher.embed([text])[0] - together[i]).abs().max()), 1e-5)

    def test_another_weights_file_is_refused(self):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "model.safetensors"), "wb") as f:
                f.write(struct.pack("<Q", 2) + b"{}")
            with self.assertRaises(SystemExit) as refused:
                teacher.Teacher(folder)
            self.assertIn("refused", str(refused.exception))

    def test_the_store_holds_the_teachers_rows(self):
        texts = ["cat", "kitten", "truck"]
        with tempfile.TemporaryDirectory() as store:
            pending = os.path.join(store, "pending.tsv")
            teacher_data.write_pending(pending, texts)
            embed = lambda t, progress: teacher.rows_bytes(self.teacher.embed(t, progress=progress))
            teacher_data.append(store, pending, teacher.HIDDEN, embed, chunk=2)
            rows = teacher_data.load_keys(store, teacher.HIDDEN)
            expected = self.teacher.embed(texts)
            with open(os.path.join(store, "rows.f32"), "rb") as f:
                for i, text in enumerate(texts):
                    row = teacher_data.read_row(f, rows[teacher_data.text_key(text)], teacher.HIDDEN)
                    self.assertLess(max(abs(a - float(b)) for a, b in zip(row, expected[i])), 1e-6)


if __name__ == "__main__":
    unittest.main(verbosity=2)
