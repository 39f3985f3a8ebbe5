//! Image files for the console's image tests (issue 31 point 6): a real PNG a browser decodes,
//! an SVG with a script in it, and files that are not what their names say.

use std::io::Write;

/// A `width` x `height` RGB PNG of one colour, valid for any decoder.
pub fn png(width: u32, height: u32, rgb: [u8; 3]) -> Vec<u8> {
    // Each row: filter type 0 (none), then the pixels.
    let row: Vec<u8> = std::iter::once(0)
        .chain((0..width).flat_map(|_| rgb))
        .collect();
    let raw = row.repeat(height as usize);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&raw).expect("in memory");
    let idat = z.finish().expect("in memory");
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8 bits, RGB, deflate, no filter, no interlace
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(&b"IHDR"[..], &ihdr[..]), (b"IDAT", &idat), (b"IEND", &[])] {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.sum().to_be_bytes());
    }
    out
}

/// An SVG that would run a script and load another origin if it were opened as a page.
pub const HOSTILE_SVG: &str = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"12\" height=\"12\"><script>window.ran = 1</script><image href=\"https://evil.example/y.png\"/><rect width=\"12\" height=\"12\" fill=\"#0a7\"/></svg>\n";

/// The PNG signature followed by `len` zero bytes: over the cap by its size alone.
pub fn oversized_png(len: usize) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.resize(len, 0);
    out
}
