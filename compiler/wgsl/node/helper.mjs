// compiler/wgsl/node/helper.mjs: the WGSL backend's device process. compiler/wgsl/run.c
// starts it once per process (node helper.mjs), and drives it over two pipes: requests
// arrive on fd 3, replies leave on fd 4 (stdout and stderr are not part of the protocol:
// Dawn and Node may print there).
//
// Protocol: every message, either way, is a frame
//   u32 header length, u32 payload length (little-endian), header (JSON, UTF-8), payload
// and every request gets exactly one reply, in order. A reply's header is {ok: true, ...}
// or {ok: false, kind: "compile" | "error", msg: "..."}.
//
// Requests (header fields; the payload is empty unless said):
//   info                          -> {adapter, backend, fallback, dawn, node, features, limits}
//   module  {src, kernels: [{entry, bindings: [n...], groups, chunk?, stride?}], scratch, sbind}
//                                 -> {id}; Tint's messages as kind "compile"
//   alloc   {id, sizes: [bytes...], guard, pattern}
//           one GPU buffer per size: guard bytes, the data (zeroed), padding to 4 bytes and
//           guard bytes again, every byte outside the data set to pattern; binding 0 is the
//           error slot (4 i32, zeroed at each launch), binding b + 1 is buffer b. With
//           scratch > 0 also the scratch buffer (scratch bytes, uninitialised) and the chunk
//           entries: a kernel with a chunk (work-groups per dispatch) runs in dispatches of
//           that many work-groups, each with the scratch buffer at binding sbind and at
//           sbind + 1 its uniform entry (first work-group, work-groups, stride, 0: u32),
//           entries CHUNK_STRIDE bytes apart (compiler/wgsl/wgsl.h, "Scratch")
//   upload  {id, buf} + data      writes data at the buffer's data offset
//   launch  {id, n}               -> {err: [slot0, slot1], runs, ms}: n runs (default 1)
//                                    of every kernel in order in one compute pass (a
//                                    dispatch sees the writes of the ones before it), the
//                                    error slot zeroed once before them and read once after
//   read    {id, buf}             -> the whole buffer, guards included, as the payload
//   free    {id}
// The process ends at end of input (its parent is gone or done).
//
// The adapter: Dawn's default (Vulkan on Linux: a GPU driver, or Mesa >= 24 lavapipe), else
// OpenGL ES through EGL in WebGPU's compatibility mode (an NVIDIA container with EGL but no
// working Vulkan ICD); ASSAY_WGSL_BACKEND=vulkan|opengles|... picks one Dawn backend.
// The device asks for the adapter's limits (storage buffers per stage, binding size,
// invocations per work-group) and shader-f16 where offered (the kernels do not use it:
// 16-bit data is packed u32 with integer conversions, see compiler/wgsl/lib.c).
import { readFileSync, readSync, writeSync } from 'node:fs';
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
const IN = 3, OUT = 4;

function readFull(n) {
	const buf = Buffer.alloc(n);
	let got = 0;
	while (got < n) {
		let k;
		try {
			k = readSync(IN, buf, got, n - got, null);
		} catch (e) {
			if (e.code === 'EAGAIN' || e.code === 'EINTR')
				continue;
			throw e;
		}
		if (k === 0)
			return null;
		got += k;
	}
	return buf;
}

function readFrame() {
	const head = readFull(8);
	if (!head)
		return null;
	const hl = head.readUInt32LE(0), pl = head.readUInt32LE(4);
	const h = hl ? readFull(hl) : Buffer.alloc(0);
	const p = pl ? readFull(pl) : Buffer.alloc(0);
	if (!h || !p)
		return null;
	return { req: JSON.parse(h.toString('utf8')), payload: p };
}

function writeAll(buf) {
	let off = 0;
	while (off < buf.length) {
		try {
			off += writeSync(OUT, buf, off, buf.length - off);
		} catch (e) {
			if (e.code !== 'EAGAIN' && e.code !== 'EINTR')
				throw e;
		}
	}
}

function writeFrame(rep, payload) {
	const h = Buffer.from(JSON.stringify(rep), 'utf8');
	const p = payload ? Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength) : Buffer.alloc(0);
	const head = Buffer.alloc(8);
	head.writeUInt32LE(h.length, 0);
	head.writeUInt32LE(p.length, 4);
	writeAll(head);
	writeAll(h);
	if (p.length)
		writeAll(p);
}

class Failure extends Error {
	constructor(kind, msg) {
		super(msg);
		this.kind = kind;
	}
}

// ------------------------------------------------------------ the device

const gpu = { nav: null, adapter: null, device: null, lost: null, why: null };

async function device() {
	if (gpu.device)
		return gpu.device;
	if (gpu.why)
		throw new Failure('error', gpu.why);
	try {
		// Dawn's default (Vulkan on Linux); then OpenGL ES through EGL, in WebGPU's
		// compatibility mode, for machines whose GPU driver has EGL but no working Vulkan
		// (a container given NVIDIA's compute and EGL libraries, say).
		// ASSAY_WGSL_BACKEND names one Dawn backend (vulkan, opengles, ...) to use alone.
		const only = process.env.ASSAY_WGSL_BACKEND;
		const tries = only ? [[only, only.startsWith('opengl') ? 'compatibility' : 'core']] :
			[[null, 'core'], ['opengles', 'compatibility']];
		let adapter = null;
		for (const [be, level] of tries) {
			gpu.nav = create(be ? [`backend=${be}`] : []);
			adapter = await gpu.nav.requestAdapter({ powerPreference: 'high-performance', featureLevel: level });
			if (adapter)
				break;
		}
		if (!adapter)
			throw new Error('Dawn found no WebGPU adapter (neither a Vulkan driver it accepts, such as Mesa >= 24 lavapipe or a GPU driver, nor OpenGL ES through EGL)');
		const L = adapter.limits, want = {};
		for (const k of ['maxStorageBuffersPerShaderStage', 'maxStorageBufferBindingSize', 'maxBufferSize',
			'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupStorageSize',
			'maxComputeWorkgroupsPerDimension', 'maxBindingsPerBindGroup'])
			want[k] = L[k];
		const features = adapter.features.has('shader-f16') ? ['shader-f16'] : [];
		const dev = await adapter.requestDevice({ requiredLimits: want, requiredFeatures: features });
		dev.lost.then((info) => { gpu.lost = `the device was lost: ${info.reason}: ${info.message}`; });
		gpu.adapter = adapter;
		gpu.device = dev;
		return dev;
	} catch (e) {
		gpu.why = String(e && e.message ? e.message : e);
		throw new Failure('error', gpu.why);
	}
}

function scopes(dev) {
	dev.pushErrorScope('internal');
	dev.pushErrorScope('out-of-memory');
	dev.pushErrorScope('validation');
}

async function popScopes(dev, what) {
	const errs = [];
	for (let i = 0; i < 3; i++) {
		const e = await dev.popErrorScope();
		if (e)
			errs.push(e.message);
	}
	if (gpu.lost)
		errs.push(gpu.lost);
	if (errs.length)
		throw new Failure('error', `${what}: ${errs.join('; ')}`);
}

// ------------------------------------------------------------ requests

const modules = new Map();
let nextId = 1;
const CHUNK_STRIDE = 256;   // WGSL_CHUNK_STRIDE: WebGPU's largest minUniformBufferOffsetAlignment

async function info() {
	const dev = await device();
	const a = gpu.adapter.info;
	const name = [a.vendor, a.architecture, a.description || a.device].filter((s) => s).join(', ');
	const limits = {};
	for (const k in dev.limits)
		limits[k] = dev.limits[k];
	let dawn = '?';
	try {
		dawn = JSON.parse(readFileSync(new URL('./node_modules/webgpu/package.json', import.meta.url))).version;
	} catch {}
	return { adapter: name, backend: a.backendType || '', fallback: !!a.isFallbackAdapter,
		dawn, node: process.version, features: [...dev.features], limits };
}

async function makeModule(req) {
	const dev = await device();
	scopes(dev);
	const mod = dev.createShaderModule({ code: req.src });
	const ci = await mod.getCompilationInfo();
	const errs = ci.messages.filter((m) => m.type === 'error')
		.map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`);
	if (errs.length) {
		await popScopes(dev, 'module').catch(() => {});
		throw new Failure('compile', errs.join('\n'));
	}
	let kernels;
	try {
		const pipes = await Promise.all(req.kernels.map((k) => dev.createComputePipelineAsync({
			layout: 'auto', compute: { module: mod, entryPoint: k.entry } })));
		kernels = req.kernels.map((k, i) => ({ pipe: pipes[i], bindings: k.bindings, groups: k.groups,
			chunk: k.chunk || 0, stride: k.stride || 0 }));
	} catch (e) {
		await popScopes(dev, 'pipeline').catch(() => {});
		throw new Failure('compile', String(e && e.message ? e.message : e));
	}
	try {
		await popScopes(dev, 'pipeline');
	} catch (e) {
		throw new Failure('compile', e.message);
	}
	const id = nextId++;
	modules.set(id, { kernels, bufs: null, guard: 0, sizes: null, pattern: 0, groups: null,
		scratch: req.scratch || 0, sbind: req.sbind || 0, extra: [] });
	return { id };
}

function mod(req) {
	const m = modules.get(req.id);
	if (!m)
		throw new Failure('error', `no module ${req.id}`);
	return m;
}

const round4 = (n) => (n + 3) & ~3;

async function alloc(req) {
	const dev = await device();
	const m = mod(req);
	scopes(dev);
	const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
	m.guard = req.guard;
	m.pattern = req.pattern;
	m.sizes = [16, ...req.sizes];
	m.bufs = m.sizes.map((bytes, i) => {
		const g = i === 0 ? 0 : req.guard;
		const total = g + round4(Math.max(bytes, 4)) + g;
		const b = dev.createBuffer({ size: total, usage, mappedAtCreation: true });
		const u8 = new Uint8Array(b.getMappedRange());
		if (i > 0) {
			u8.fill(req.pattern);
			u8.fill(0, g, g + bytes);
		}
		b.unmap();
		return b;
	});
	// per kernel, its dispatches: [first work-group, work-groups, bind group]
	const entries = (k) => k.bindings.map((n) => ({ binding: n, resource: { buffer: m.bufs[n] } }));
	const chunked = m.kernels.map((k) => k.chunk > 0 && k.groups > 0 ? Math.ceil(k.groups / k.chunk) : 0);
	const nchunks = chunked.reduce((a, b) => a + b, 0);
	let scr = null, ubuf = null, at = 0;
	if (nchunks) {
		scr = dev.createBuffer({ size: round4(Math.max(m.scratch, 4)), usage: GPUBufferUsage.STORAGE });
		ubuf = dev.createBuffer({ size: nchunks * CHUNK_STRIDE, usage: GPUBufferUsage.UNIFORM,
			mappedAtCreation: true });
		m.extra = [scr, ubuf];
	}
	const u32 = ubuf ? new Uint32Array(ubuf.getMappedRange()) : null;
	m.groups = m.kernels.map((k, i) => {
		if (k.groups <= 0)
			return [];
		const layout = k.pipe.getBindGroupLayout(0);
		if (!chunked[i])
			return [[0, k.groups, dev.createBindGroup({ layout, entries: entries(k) })]];
		const out = [];
		for (let c = 0; c < chunked[i]; c++, at++) {
			const first = c * k.chunk, n = Math.min(k.chunk, k.groups - first);
			u32.set([first, n, k.stride, 0], at * CHUNK_STRIDE / 4);
			out.push([first, n, dev.createBindGroup({ layout, entries: [...entries(k),
				{ binding: m.sbind, resource: { buffer: scr } },
				{ binding: m.sbind + 1, resource: { buffer: ubuf, offset: at * CHUNK_STRIDE, size: 16 } }] })]);
		}
		return out;
	});
	if (ubuf)
		ubuf.unmap();
	await popScopes(dev, 'alloc');
	return {};
}

async function upload(req, payload) {
	const dev = await device();
	const m = mod(req);
	const n = req.buf + 1;
	if (!m.bufs || n >= m.bufs.length || payload.length !== m.sizes[n])
		throw new Failure('error', `upload: buffer ${req.buf} is not ${payload.length} bytes`);
	const data = new Uint8Array(round4(payload.length)).fill(m.pattern);
	data.set(payload);
	scopes(dev);
	dev.queue.writeBuffer(m.bufs[n], m.guard, data);
	await popScopes(dev, 'upload');
	return {};
}

async function readBack(dev, buf, size) {
	const rb = dev.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
	const enc = dev.createCommandEncoder();
	enc.copyBufferToBuffer(buf, 0, rb, 0, size);
	dev.queue.submit([enc.finish()]);
	await rb.mapAsync(GPUMapMode.READ);
	const out = new Uint8Array(rb.getMappedRange().slice(0));
	rb.unmap();
	rb.destroy();
	return out;
}

async function launch(req) {
	const dev = await device();
	const m = mod(req);
	if (!m.bufs)
		throw new Failure('error', 'launch before alloc');
	const t0 = performance.now();
	scopes(dev);
	dev.queue.writeBuffer(m.bufs[0], 0, new Int32Array(4));
	const enc = dev.createCommandEncoder();
	const pass = enc.beginComputePass();
	const maxDim = dev.limits.maxComputeWorkgroupsPerDimension;
	const runs = Number.isInteger(req.n) && req.n > 0 ? req.n : 1;
	for (let run = 0; run < runs; run++)
		m.kernels.forEach((k, i) => {
			if (k.groups <= 0)
				return;
			pass.setPipeline(k.pipe);
			for (const [, n, group] of m.groups[i]) {
				pass.setBindGroup(0, group);
				const x = Math.min(n, maxDim), y = Math.ceil(n / x);
				if (y > maxDim)
					throw new Failure('error', `kernel ${i}: ${n} work-groups are more than a dispatch holds`);
				pass.dispatchWorkgroups(x, y);
			}
		});
	pass.end();
	dev.queue.submit([enc.finish()]);
	const err = new Int32Array((await readBack(dev, m.bufs[0], 16)).buffer);
	await popScopes(dev, 'launch');
	return { err: [err[0], err[1]], runs, ms: performance.now() - t0 };
}

async function read(req) {
	const dev = await device();
	const m = mod(req);
	const n = req.buf + 1;
	if (!m.bufs || n >= m.bufs.length)
		throw new Failure('error', `read: no buffer ${req.buf}`);
	scopes(dev);
	const out = await readBack(dev, m.bufs[n], m.bufs[n].size);
	await popScopes(dev, 'read');
	return [{}, out];
}

function free(req) {
	const m = modules.get(req.id);
	if (m && m.bufs)
		for (const b of [...m.bufs, ...m.extra])
			b.destroy();
	modules.delete(req.id);
	return {};
}

async function handle(req, payload) {
	switch (req.cmd) {
	case 'info': return [await info()];
	case 'module': return [await makeModule(req)];
	case 'alloc': return [await alloc(req)];
	case 'upload': return [await upload(req, payload)];
	case 'launch': return [await launch(req)];
	case 'read': return await read(req);
	case 'free': return [free(req)];
	default: throw new Failure('error', `unknown request ${req.cmd}`);
	}
}

async function main() {
	for (;;) {
		const f = readFrame();
		if (!f)
			break;
		let rep, payload = null;
		try {
			[rep, payload] = await handle(f.req, f.payload);
			rep.ok = true;
		} catch (e) {
			rep = { ok: false, kind: e instanceof Failure ? e.kind : 'error',
				msg: String(e && e.message ? e.message : e) };
			payload = null;
		}
		writeFrame(rep, payload);
	}
	for (const id of [...modules.keys()])
		free({ id });
	if (gpu.device)
		gpu.device.destroy();
	gpu.nav = null;
	process.exit(0);
}

main().catch((e) => {
	process.stderr.write(`wgsl helper: ${e && e.stack ? e.stack : e}\n`);
	process.exit(1);
});
