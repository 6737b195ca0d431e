#!/usr/bin/env bash
# Regenerates the image fixtures of FerryImageFormatTests. The committed files are what the tests read;
# this script documents how they were made and lets anyone make them again (encoders may differ in bytes
# from version to version, never in the sizes the tests check).
#
# Tools (Debian bookworm packages; run as root or with sudo):
#   DEBIAN_FRONTEND=noninteractive apt-get install -y imagemagick webp libheif-examples libavif-bin libimage-exiftool-perl
# Versions used for the committed files: ImageMagick 6.9.11-60, cwebp 1.2.4, heif-enc (libheif) 1.15.1 with x265,
# avifenc 0.11.1 with aom, exiftool 12.57.
#
# Every image has its own odd-ish, non-square size, so a swapped width/height or a size read from the wrong
# place (say, an EXIF thumbnail) fails a test.
set -euo pipefail

cd "$(dirname "$0")"
# Some machines put a stand-in `convert` first in PATH: use ImageMagick's own.
CONVERT=${CONVERT:-/usr/bin/convert}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A deterministic source picture of a given size (no random noise, no timestamps): an opaque gradient...
source_png() { "$CONVERT" -size "$1" gradient:'#d04020-#2050c0' -strip "$2"; }
# ...and one with a transparent corner, for the formats that carry alpha.
source_png_alpha() {
    "$CONVERT" -size "$1" gradient:'#d04020-#2050c0' \
        \( -size "$1" gradient:white-'rgba(0,0,0,0.2)' -rotate 90 -resize "$1"\! \) \
        -compose CopyOpacity -composite -strip "$2"
}

# PNG 37×21 (signature + IHDR).
"$CONVERT" -size 37x21 gradient:'#d04020-#2050c0' -strip -define png:exclude-chunks=date,time png-37x21.png

# JPEG baseline 64×40 (SOF0), progressive 33×17 (SOF2).
"$CONVERT" -size 64x40 gradient:'#d04020-#2050c0' -strip -quality 80 -interlace none jpeg-baseline-64x40.jpg
"$CONVERT" -size 33x17 gradient:'#d04020-#2050c0' -strip -quality 80 -interlace JPEG jpeg-progressive-33x17.jpg

# JPEG 45×27 with an EXIF APP1 segment that carries a 24×16 JPEG thumbnail: the thumbnail has a SOF marker of
# its own, before the real one, so a reader that scans for FF C0 instead of walking segments gets 24×16.
"$CONVERT" -size 45x27 gradient:'#d04020-#2050c0' -strip -quality 80 jpeg-exif-45x27.jpg
"$CONVERT" -size 24x16 gradient:'#20c050-#c02050' -strip -quality 60 "$work/thumb.jpg"
exiftool -q -overwrite_original -Make=Ferry -Model=Fixture '-ThumbnailImage<='"$work/thumb.jpg" jpeg-exif-45x27.jpg

# GIF 19×11 (GIF89a).
"$CONVERT" -size 19x11 gradient:'#d04020-#2050c0' -strip gif-19x11.gif

# WebP: lossy 41×23 (simple "VP8 "), lossless 29×13 (simple "VP8L"), lossy with alpha 31×17 (extended "VP8X").
source_png 41x23 "$work/webp-lossy.png"
cwebp -quiet -q 75 -metadata none "$work/webp-lossy.png" -o webp-lossy-41x23.webp
source_png 29x13 "$work/webp-lossless.png"
cwebp -quiet -lossless -metadata none "$work/webp-lossless.png" -o webp-lossless-29x13.webp
source_png_alpha 31x17 "$work/webp-alpha.png"
cwebp -quiet -q 75 -metadata none "$work/webp-alpha.png" -o webp-alpha-31x17.webp

# BMP: BITMAPINFOHEADER 15×9 (bottom-up), BITMAPCOREHEADER 13×7 (OS/2 / Windows 2.x, 16-bit sizes),
# BITMAPV5HEADER 11×5 (with alpha), and a top-down 17×7 (negative height).
"$CONVERT" -size 15x9 gradient:'#d04020-#2050c0' -strip BMP3:bmp-15x9.bmp
"$CONVERT" -size 13x7 gradient:'#d04020-#2050c0' -strip BMP2:bmp-core-13x7.bmp
source_png_alpha 11x5 "$work/bmp-v5.png"
"$CONVERT" "$work/bmp-v5.png" BMP:bmp-v5-11x5.bmp
# ImageMagick writes only bottom-up BMPs. A top-down one is a bottom-up file of the vertically flipped picture
# (its rows are then stored top row first) with the height field (bytes 22–25, little-endian int32) negated.
"$CONVERT" -size 17x7 gradient:'#d04020-#2050c0' -flip -strip BMP3:bmp-topdown-17x7.bmp
perl -e '
    open(my $f, "+<:raw", $ARGV[0]) or die $!;
    seek($f, 22, 0); read($f, my $h, 4); my $height = unpack("l<", $h);
    die "expected a bottom-up BMP\n" unless $height > 0;
    seek($f, 22, 0); print $f pack("l<", -$height); close($f);
' bmp-topdown-17x7.bmp

# HEIC 64×48 (HEVC via x265), and one with a 16×12 thumbnail item: two `ispe` properties, the larger is the image.
source_png 64x48 "$work/heic.png"
heif-enc -q 40 "$work/heic.png" -o heic-64x48.heic > /dev/null
heif-enc -q 40 -t 16 "$work/heic.png" -o heic-thumb-64x48.heic > /dev/null

# AVIF 48×32 (AV1 via aom), and 27×19 with alpha (an auxiliary alpha item with its own `ispe`).
source_png 48x32 "$work/avif.png"
avifenc --min 20 --max 40 -s 8 "$work/avif.png" avif-48x32.avif > /dev/null
source_png_alpha 27x19 "$work/avif-alpha.png"
avifenc --min 20 --max 40 -s 8 "$work/avif-alpha.png" avif-alpha-27x19.avif > /dev/null

# Bodies that are not images: what an origin sends instead of the picture.
cat > page.html <<'HTML'
<!DOCTYPE html>
<html><head><title>404 Not Found</title></head>
<body><h1>Not Found</h1><p>The requested image was not found on this server.</p></body></html>
HTML
printf '{"error":"not found","status":404}\n' > body.json
cat > vector.svg <<'SVG'
<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20" viewBox="0 0 40 20"><rect width="40" height="20" fill="#2050c0"/></svg>
SVG

ls -l
