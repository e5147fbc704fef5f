#!/usr/bin/env python3
"""e2e_view.py — drives `splat view` / `splat train --view` (tests/e2e_view.sh starts them).

  e2e_view.py bad URL            bad requests get HTTP errors and the server keeps answering
  e2e_view.py page URL RENDERS   the page in headless Chromium matches `splat render` (PSNR >= 35 dB),
                                 the background switch and an orbit drag change the picture
  e2e_view.py live URL           the live page's step number increases while training runs

Prints "ok: ..." / "FAIL: ..." lines; exit 0 when all passed, 1 when one failed, 77 when the
browser cannot run here (SKIPPED)."""
import http.client
import io
import math
import os
import socket
import sys
import time
import urllib.parse

fails = 0


def ok(msg):
    print("ok: " + msg, flush=True)


def bad(msg):
    global fails
    fails += 1
    print("FAIL: " + msg, flush=True)


def check(cond, msg):
    ok(msg) if cond else bad(msg)


def hostport(url):
    u = urllib.parse.urlparse(url)
    return u.hostname, u.port


def get(url, path, headers=None):
    h, p = hostport(url)
    c = http.client.HTTPConnection(h, p, timeout=20)
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, r.getheader("Content-Type", ""), body


def raw(url, data, timeout=10):
    """Sends bytes as they are and returns the status line ('' when the server closed)."""
    h, p = hostport(url)
    s = socket.create_connection((h, p), timeout=timeout)
    try:
        s.sendall(data)
        out = b""
        while b"\r\n" not in out:
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
        return out.split(b"\r\n", 1)[0].decode("latin-1")
    except (ConnectionError, socket.timeout):
        return ""
    finally:
        s.close()


def bad_requests(url):
    st, ct, body = get(url, "/")
    check(st == 200 and ct.startswith("text/html") and b"<canvas" in body, "GET / serves the page")
    st, ct, body = get(url, "/api/info")
    check(st == 200 and ct == "application/json" and b'"cameras"' in body, "GET /api/info is JSON")
    st, ct, body = get(url, "/api/render?split=test&i=0")
    check(st == 200 and ct == "image/jpeg" and body[:2] == b"\xff\xd8", "GET /api/render gives a JPEG")
    for path, want in [("/nope", 404), ("/web/view.html.bak", 404), ("/../etc/passwd", 400), ("/%2e%2e/etc/passwd", 400),
                       ("/api/render?w=10", 400), ("/api/render?w=99999&h=10&fx=1&R=1,0,0,0,1,0,0,0,1&t=0,0,0", 400),
                       ("/api/render?split=test&i=9999", 404), ("/api/render?split=nope&i=0", 400),
                       ("/api/render?split=test&i=0&bg=purple", 400), ("/api/gt?split=test&i=-1", 400),
                       ("/api/render?w=8&h=8&fx=10&R=1,0,0,0,1,0,0,0,nan&t=0,0,0", 400)]:
        st, _, _ = get(url, path)
        check(st == want, "GET %s -> %d (got %d)" % (path, want, st))
    line = raw(url, b"GET /api/info HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n")
    check(line.split(" ")[1:2] and line.split(" ")[1][0] == "4" or line == "",
          "a 200 kB header gets a 4xx or a closed connection (%r)" % line)
    line = raw(url, b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    check(line == "" or line.split(" ")[1][0] == "4", "a 100 kB URL gets a 4xx or a closed connection (%r)" % line)
    line = raw(url, b"\x00\x01garbage\r\n\r\n", timeout=3)
    check(line == "" or line.split(" ")[1][0] == "4", "a malformed request line gets a 4xx (%r)" % line)
    line = raw(url, b"POST /api/info HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
    check(" 405 " in line + " ", "POST gets 405 (%r)" % line)
    # Many connections at once, each idle or sending half a request: the server refuses what is
    # over its limits and still answers afterwards.
    h, p = hostport(url)
    socks = []
    for i in range(300):
        try:
            s = socket.create_connection((h, p), timeout=2)
            s.sendall(b"GET /api/info HTTP/1.1\r\nHost: x\r\n")  # never finished
            socks.append(s)
        except OSError:
            pass
    for s in socks:
        s.close()
    # The server frees a connection when it sees the close, or at the latest after its 15 s
    # connection timeout; until then a new one over the per-address limit is reset.
    t0, st = time.time(), 0
    while time.time() - t0 < 20 and st != 200:
        try:
            st, _, _ = get(url, "/api/info")
        except (ConnectionError, http.client.HTTPException, socket.timeout):
            time.sleep(0.1)
    check(st == 200, "after %d half-open connections the server answers within 20 s (%d after %.1f s)"
          % (len(socks), st, time.time() - t0))
    st, _, body = get(url, "/api/render?split=test&i=0")
    check(st == 200 and body[:2] == b"\xff\xd8", "and still renders")


# ---- the browser ----

def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except Exception as e:  # noqa: BLE001
        print("SKIPPED: python3-selenium is not installed (%s)" % e)
        sys.exit(77)
    chrome = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if os.path.exists(p)), None)
    driver_bin = next((p for p in ("/usr/bin/chromedriver",) if os.path.exists(p)), None)
    if not chrome or not driver_bin:
        print("SKIPPED: chromium or chromedriver is not installed (scripts/setup.sh installs them)")
        sys.exit(77)
    o = webdriver.ChromeOptions()
    o.binary_location = chrome
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900",
              "--force-device-scale-factor=1", "--hide-scrollbars", "--force-color-profile=srgb"):
        o.add_argument(a)
    try:
        return webdriver.Chrome(service=Service(driver_bin), options=o)
    except Exception as e:  # noqa: BLE001
        print("SKIPPED: headless Chromium does not start here (%s)" % str(e).splitlines()[0])
        sys.exit(77)


def wait(d, js, timeout=30):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = d.execute_script(js)
        if v:
            return v
        time.sleep(0.05)
    return None


def canvas_pixels(d):
    from PIL import Image
    png = d.find_element("id", "view").screenshot_as_png
    return Image.open(io.BytesIO(png)).convert("RGB")


def psnr(a, b):
    if a.size != b.size:
        return -1.0
    pa, pb = a.tobytes(), b.tobytes()
    se = sum((x - y) * (x - y) for x, y in zip(pa, pb))
    mse = se / len(pa)
    return 99.0 if mse == 0 else 10 * math.log10(255.0 * 255.0 / mse)


def shown_after(d, key, frames):
    """Waits until the canvas shows a frame newer than `frames` for camera/settings key."""
    js = ("const v=document.getElementById('view');return v.dataset.shown===%r && +v.dataset.frames>%d"
          " && !window.splatView.inflight && !window.splatView.dirty" % (key, frames))
    return wait(d, js)


def frames(d):
    return int(d.execute_script("return +(document.getElementById('view').dataset.frames||0)"))


def page(url, renders):
    from PIL import Image
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import Select
    d = browser()
    try:
        d.get(url)
        check(shown_after(d, "test/0|-1|white", 0), "the page draws test view 0")
        d.find_element("id", "showcams").click()  # hide the camera frusta drawn over the frame
        check(not d.find_element("id", "showcams").is_selected(), "the cameras switch turns off")
        check(d.execute_script("return document.getElementById('gt').naturalWidth > 0 || "
                               "!!document.getElementById('gt').src"), "the ground truth is shown beside the view")
        for i in (0, 1):
            f = frames(d)
            Select(d.find_element("id", "cams")).select_by_value("test/%d" % i)
            check(shown_after(d, "test/%d|-1|white" % i, f if i else -1), "selecting test view %d renders it" % i)
            shot = canvas_pixels(d)
            ref = Image.open(os.path.join(renders, "r_%d.png" % i)).convert("RGB")
            p = psnr(shot, ref)
            check(p >= 35.0, "test view %d in the browser vs `splat render`: PSNR %.2f dB >= 35 (%s vs %s)"
                  % (i, p, shot.size, ref.size))
        white = canvas_pixels(d)
        f = frames(d)
        d.find_element("id", "bg").click()
        check(shown_after(d, "test/1|-1|black", f), "the background switch re-renders")
        black = canvas_pixels(d)
        p = psnr(white, black)
        corner_w, corner_b = white.getpixel((0, 0)), black.getpixel((0, 0))
        check(p < 30 and sum(corner_b) < sum(corner_w) - 300,
              "the background switch changes the picture (PSNR white vs black %.1f dB, corner %s -> %s)"
              % (p, corner_w, corner_b))
        f = frames(d)
        ActionChains(d).move_to_element(d.find_element("id", "overlay")).click_and_hold().move_by_offset(25, 5) \
            .move_by_offset(10, 0).release().perform()
        check(shown_after(d, "free|-1|black", f), "an orbit drag renders a free camera")
        check(psnr(canvas_pixels(d), black) < 40, "and the picture moves")
        fps = wait(d, "const t=document.getElementById('fps').textContent; return t!=='-' && t")
        check(fps is not None, "the frame rate is shown (%s fps)" % fps)
    finally:
        d.quit()


def live(url):
    d = browser()
    try:
        d.get(url)
        s0 = wait(d, "const s=+document.getElementById('step').textContent; return s>0 && s")
        check(s0, "the live page shows a step number (%s)" % s0)
        time.sleep(2.5)
        s1 = int(d.execute_script("return +document.getElementById('step').textContent"))
        check(s0 and s1 > s0, "the step number increases while training (%s -> %s)" % (s0, s1))
        g = int(d.execute_script("return +document.getElementById('gauss').textContent"))
        check(g > 0, "the Gaussian count is shown (%d)" % g)
        check(wait(d, "return +(document.getElementById('view').dataset.frames||0) > 0", 20),
              "the live model is rendered")
        f = frames(d)
        check(wait(d, "return +(document.getElementById('view').dataset.frames||0) > %d" % f, 20),
              "and re-rendered as training goes on")
    finally:
        d.quit()


if __name__ == "__main__":
    mode, url = sys.argv[1], sys.argv[2]
    try:
        if mode == "bad":
            bad_requests(url)
        elif mode == "page":
            page(url, sys.argv[3])
        elif mode == "live":
            live(url)
    except Exception as e:  # noqa: BLE001 -- one FAIL line that says what broke, not a bare traceback
        bad("%s stopped on %s: %s" % (mode, type(e).__name__, (str(e).strip().splitlines() or [""])[0]))
    sys.exit(1 if fails else 0)
