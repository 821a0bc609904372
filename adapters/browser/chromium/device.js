// The part of a profile's device that no launch flag or CDP setting gives:
// run before any script of a document or a worker, with the device as its
// argument. Every function it replaces keeps the native one behind a Proxy,
// and Function.prototype.toString answers for the Proxy what it answers for
// the native function, so a page cannot tell them apart by their source.
function applyDevice(device) {
	const G = globalThis;
	// The function's own source, for a popup's first document (below).
	const source = Function.prototype.toString.call(applyDevice);

	// originals maps each replacement to the native function it stands
	// for. Frames of one origin share one map, so that one frame's
	// Function.prototype.toString answers for another's replacements as
	// for natives: a frame asks its parent (or opener) for the map by
	// calling that realm's toString with the launch's secret as argument,
	// which no page knows and the native ignores.
	let originals = null;
	for (const other of [G.parent, G.opener]) {
		try {
			if (!other || other === G) continue;
			const shared = Reflect.apply(other.Function.prototype.toString, other.Function, [device.secret]);
			if (Object.prototype.toString.call(shared) === '[object WeakMap]') {
				originals = shared;
				break;
			}
		} catch {
			// another origin's: its functions are out of this realm's reach.
		}
	}
	originals = originals || new WeakMap();
	if (originals.has(Function.prototype.toString)) {
		// This realm has the device already: a popup's first document,
		// given it by its opener.
		return;
	}
	const nativeToString = Function.prototype.toString;
	const toStringProxy = new Proxy(nativeToString, {
		apply: (target, self, args) => {
			if (args[0] === device.secret) return originals;
			return Reflect.apply(target, originals.get(self) || self, args);
		},
	});
	originals.set(toStringProxy, nativeToString);
	Object.defineProperty(Function.prototype, 'toString', { ...Object.getOwnPropertyDescriptor(Function.prototype, 'toString'), value: toStringProxy });

	// replace puts handler's apply in place of obj[key] (a method).
	const replace = (obj, key, apply) => {
		const d = obj && Object.getOwnPropertyDescriptor(obj, key);
		if (!d || typeof d.value !== 'function') return;
		const p = new Proxy(d.value, { apply });
		originals.set(p, d.value);
		Object.defineProperty(obj, key, { ...d, value: p });
	};
	// getter makes obj's accessor key answer get(self, original).
	const getter = (obj, key, get) => {
		const d = obj && Object.getOwnPropertyDescriptor(obj, key);
		if (!d || typeof d.get !== 'function') return;
		const p = new Proxy(d.get, { apply: (target, self, args) => get(self, () => Reflect.apply(target, self, args)) });
		originals.set(p, d.get);
		Object.defineProperty(obj, key, { ...d, get: p });
	};
	const value = (v) => () => v;

	// Noise: a hash of the profile's seed and a position, the same on every
	// launch, so a canvas or a sound reads the same twice and differs from
	// every other profile's.
	const seed = [0, 8].map((i) => parseInt(device.noiseSeed.slice(i, i + 8), 16) >>> 0);
	const hash = (n) => {
		let h = (seed[0] ^ Math.imul(n >>> 0, 0x9e3779b1)) >>> 0;
		h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) ^ seed[1];
		h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
		return (h ^ (h >>> 16)) >>> 0;
	};
	// noisePixels changes the lowest bit of one colour of about one pixel in
	// 64 of RGBA data read at (x0, y0) of a surface width pixels wide.
	const noisePixels = (data, x0, y0, w, h, width) => {
		for (let y = 0; y < h; y++) {
			for (let x = 0; x < w; x++) {
				const hv = hash((y0 + y) * width + x0 + x);
				if ((hv & 63) !== 0) continue;
				const i = (y * w + x) * 4;
				if (data[i + 3] === 0) continue;
				data[i + (hv >>> 6) % 3] ^= 1;
			}
		}
	};

	// Navigator: cores, memory, platform (also in workers).
	const nav = G.WorkerNavigator ? G.WorkerNavigator.prototype : G.Navigator && G.Navigator.prototype;
	getter(nav, 'hardwareConcurrency', value(device.hardwareConcurrency));
	getter(nav, 'deviceMemory', value(device.deviceMemory));
	getter(nav, 'platform', value(device.platform));
	if (G.Navigator) getter(G.Navigator.prototype, 'maxTouchPoints', value(device.maxTouchPoints));

	// The window's own chrome: a headless window has none. It is the
	// device's in every frame, also in one not laid out yet (inside 0x0).
	if (device.chrome && G.Window) {
		getter(G, 'outerWidth', (self) => self.innerWidth + device.chrome[0]);
		getter(G, 'outerHeight', (self) => self.innerHeight + device.chrome[1]);
	}

	// The screen's available part, on a display without a taskbar.
	if (device.avail && G.Screen) {
		getter(G.Screen.prototype, 'availWidth', value(device.avail[0]));
		getter(G.Screen.prototype, 'availHeight', value(device.avail[1]));
	}

	// WebGL: the device's GPU and its limits, and noise in what is read
	// back.
	const webgl = device.webgl;
	for (const ctx of [G.WebGLRenderingContext, G.WebGL2RenderingContext]) {
		if (!ctx) continue;
		replace(ctx.prototype, 'getParameter', (target, self, args) => {
			const p = args[0];
			if (Object.prototype.hasOwnProperty.call(webgl, p)) {
				const v = webgl[p];
				if (!Array.isArray(v)) return v;
				// MAX_VIEWPORT_DIMS is integers; the two ranges are not.
				return p === 0x0d3a ? new Int32Array(v) : new Float32Array(v);
			}
			return Reflect.apply(target, self, args);
		});
		replace(ctx.prototype, 'readPixels', (target, self, args) => {
			const r = Reflect.apply(target, self, args);
			const [x, y, w, h, format, type, pixels] = args;
			if (pixels && pixels.length >= w * h * 4 && format === self.RGBA && type === self.UNSIGNED_BYTE) {
				noisePixels(pixels, x, y, w, h, self.drawingBufferWidth);
			}
			return r;
		});
	}

	// Canvas 2D: what is read back carries the noise, wherever it is read.
	const ctx2d = [G.CanvasRenderingContext2D, G.OffscreenCanvasRenderingContext2D].filter(Boolean);
	for (const c of ctx2d) {
		replace(c.prototype, 'getImageData', (target, self, args) => {
			const img = Reflect.apply(target, self, args);
			noisePixels(img.data, args[0] | 0, args[1] | 0, img.width, img.height, self.canvas.width);
			return img;
		});
	}
	// noisyCopy is a copy of canvas with the noise, for the methods that
	// export a whole canvas; null when it cannot be read (a 0 size).
	const noisyCopy = (canvas) => {
		const w = canvas.width, h = canvas.height;
		if (!w || !h || !G.OffscreenCanvas) return null;
		const copy = new G.OffscreenCanvas(w, h);
		const c = copy.getContext('2d');
		c.drawImage(canvas, 0, 0);
		const img = c.getImageData(0, 0, w, h); // noised by the getImageData above
		c.putImageData(img, 0, 0);
		return copy;
	};
	if (G.HTMLCanvasElement) {
		// The page's own createElement may be wrapped to watch for this
		// very call: the native one is kept.
		const createElement = G.Document.prototype.createElement;
		// exportNoisy exports a noisy copy of the canvas in its place.
		const exportNoisy = (target, self, args) => {
			const copy = noisyCopy(self);
			if (!copy) return Reflect.apply(target, self, args);
			const out = Reflect.apply(createElement, self.ownerDocument, ['canvas']);
			out.width = self.width;
			out.height = self.height;
			out.getContext('2d').drawImage(copy, 0, 0);
			return Reflect.apply(target, out, args);
		};
		replace(G.HTMLCanvasElement.prototype, 'toDataURL', exportNoisy);
		replace(G.HTMLCanvasElement.prototype, 'toBlob', exportNoisy);
	}
	if (G.OffscreenCanvas) {
		replace(G.OffscreenCanvas.prototype, 'convertToBlob', (target, self, args) => {
			const copy = noisyCopy(self);
			return Reflect.apply(target, copy || self, args);
		});
	}

	// Audio: every rendered buffer carries the noise once, however often
	// it is read.
	if (G.AudioBuffer) {
		const noised = new WeakSet();
		const proto = G.AudioBuffer.prototype;
		replace(proto, 'getChannelData', (target, self, args) => {
			const data = Reflect.apply(target, self, args);
			if (!noised.has(data)) {
				noised.add(data);
				for (let i = 0; i < data.length; i++) {
					const hv = hash(i + 0x51f0 * ((args[0] | 0) + 1));
					if ((hv & 7) === 0) data[i] += ((hv >>> 3) / 0x20000000 - 1) * 1e-7;
				}
			}
			return data;
		});
		replace(proto, 'copyFromChannel', (target, self, args) => {
			// The channel's data take their noise first, then are copied.
			Reflect.apply(proto.getChannelData, self, [args[1] | 0]);
			return Reflect.apply(target, self, args);
		});
	}

	// Client rects: sizes carry a noise far below a pixel.
	const rectNoise = (r) => {
		if (!r) return r;
		const n = (hash(Math.round(r.width * 64) ^ (Math.round(r.height * 64) << 12)) / 0xffffffff - 0.5) * 1e-5;
		return new DOMRect(r.x, r.y, r.width + n, r.height + n);
	};
	for (const c of [G.Element, G.Range].filter(Boolean)) {
		replace(c.prototype, 'getBoundingClientRect', (target, self, args) => rectNoise(Reflect.apply(target, self, args)));
	}

	// Media devices: the device's cameras, microphones and speakers, named
	// only after the page is allowed to (as before any permission).
	if (G.MediaDevices && G.MediaDeviceInfo) {
		const kinds = [['audioinput', device.media[0]], ['videoinput', device.media[1]], ['audiooutput', device.media[2]]];
		replace(G.MediaDevices.prototype, 'enumerateDevices', () => {
			const list = [];
			for (const [kind, n] of kinds) {
				const proto = (kind === 'audiooutput' ? G.MediaDeviceInfo : G.InputDeviceInfo || G.MediaDeviceInfo).prototype;
				for (let i = 0; i < n; i++) {
					const info = { deviceId: '', kind, label: '', groupId: '' };
					list.push(Object.create(proto, {
						deviceId: { value: '', enumerable: true }, kind: { value: kind, enumerable: true },
						label: { value: '', enumerable: true }, groupId: { value: '', enumerable: true },
						toJSON: { value: () => ({ ...info }) },
					}));
				}
			}
			return Promise.resolve(list);
		});
	}

	// A popup: its opener may read its first document at once, before its
	// target is prepared, so the opener gives it the device first. A page
	// whose policy forbids eval gets the popup as it is.
	if (G.Window) {
		const owner = Object.prototype.hasOwnProperty.call(G, 'open') ? G : G.Window.prototype;
		replace(owner, 'open', (target, self, args) => {
			const w = Reflect.apply(target, self, args);
			try {
				if (w) w.eval('(' + source + ')(' + JSON.stringify(device) + ');');
			} catch {
				// another origin's window, or no eval allowed
			}
			return w;
		});
	}

	// WebRTC off, when the profile says so.
	if (device.webrtcOff) {
		for (const k of ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel', 'RTCSessionDescription', 'RTCIceCandidate']) {
			delete G[k];
		}
	}
}
