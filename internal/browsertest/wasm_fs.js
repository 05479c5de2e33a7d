// An in-memory file system for a Go program compiled to js/wasm, in the
// shape that wasm_exec.js expects of globalThis.fs (Node's fs, with
// callbacks). It holds files, not directories: enough for os.CreateTemp
// and the temporary file that the testing package runs examples with.
// What the program writes to standard output and error goes to
// globalThis.goOutput(bytes).
"use strict";
(() => {
	const fail = (code) => {
		const e = new Error(code);
		e.code = code;
		return e;
	};
	// Node's values: syscall reads them when the program starts.
	const C = { O_WRONLY: 1, O_RDWR: 2, O_CREAT: 64, O_EXCL: 128, O_TRUNC: 512, O_APPEND: 1024, O_DIRECTORY: -1 };
	const files = new Map(); // path -> {data, size, mtimeMs}
	const fds = new Map(); // fd -> {file, pos, append}
	let nextFD = 100;

	const grow = (f, end) => {
		if (end > f.data.length) {
			const data = new Uint8Array(Math.max(end, 2 * f.data.length, 4096));
			data.set(f.data.subarray(0, f.size));
			f.data = data;
		}
		if (end > f.size) {
			f.data.fill(0, f.size, end);
			f.size = end;
		}
	};
	const stat = (f) => ({
		dev: 0, ino: 0, mode: 0o100600, nlink: 1, uid: 0, gid: 0, rdev: 0,
		size: f.size, blksize: 4096, blocks: Math.ceil(f.size / 512),
		atimeMs: f.mtimeMs, mtimeMs: f.mtimeMs, ctimeMs: f.mtimeMs,
		isDirectory: () => false,
	});
	const handle = (fd) => {
		const h = fds.get(fd);
		if (!h) throw fail("EBADF");
		return h;
	};
	// run calls the callback (last argument) with what f returns, or with
	// the error it throws.
	const run = (f) => (...args) => {
		const cb = args[args.length - 1];
		let result;
		try {
			result = f(...args.slice(0, -1));
		} catch (e) {
			cb(e);
			return;
		}
		cb(null, result);
	};
	const write = (fd, buf, offset, length, position) => {
		const bytes = buf.subarray(offset, offset + length);
		if (fd === 1 || fd === 2) {
			globalThis.goOutput(bytes.slice());
			return length;
		}
		const h = handle(fd);
		const at = position !== null ? position : h.append ? h.file.size : h.pos;
		grow(h.file, at + length);
		h.file.data.set(bytes, at);
		h.file.mtimeMs = Date.now();
		if (position === null) h.pos = at + length;
		return length;
	};
	const unsupported = (...args) => args[args.length - 1](fail("ENOSYS"));

	globalThis.goOutput = () => {};
	globalThis.fs = {
		constants: C,
		writeSync: (fd, buf) => write(fd, buf, 0, buf.length, null),
		write: run(write),
		read: run((fd, buf, offset, length, position) => {
			const h = handle(fd);
			const at = position !== null ? position : h.pos;
			const n = Math.max(0, Math.min(length, h.file.size - at));
			buf.set(h.file.data.subarray(at, at + n), offset);
			if (position === null) h.pos = at + n;
			return n;
		}),
		open: run((path, flags) => {
			let f = files.get(path);
			if (f && flags & C.O_CREAT && flags & C.O_EXCL) throw fail("EEXIST");
			if (!f) {
				if (!(flags & C.O_CREAT)) throw fail("ENOENT");
				f = { data: new Uint8Array(0), size: 0, mtimeMs: Date.now() };
				files.set(path, f);
			}
			if (flags & C.O_TRUNC) f.size = 0;
			const fd = nextFD++;
			fds.set(fd, { file: f, pos: 0, append: (flags & C.O_APPEND) !== 0 });
			return fd;
		}),
		close: run((fd) => {
			handle(fd);
			fds.delete(fd);
		}),
		fstat: run((fd) => stat(handle(fd).file)),
		stat: run((path) => {
			const f = files.get(path);
			if (!f) throw fail("ENOENT");
			return stat(f);
		}),
		lstat(path, cb) {
			this.stat(path, cb);
		},
		unlink: run((path) => {
			if (!files.delete(path)) throw fail("ENOENT");
		}),
		rename: run((from, to) => {
			const f = files.get(from);
			if (!f) throw fail("ENOENT");
			files.delete(from);
			files.set(to, f);
		}),
		ftruncate: run((fd, length) => {
			const f = handle(fd).file;
			grow(f, length);
			f.size = length;
		}),
		truncate: run((path, length) => {
			const f = files.get(path);
			if (!f) throw fail("ENOENT");
			grow(f, length);
			f.size = length;
		}),
		fsync: run(() => {}),
		chmod: unsupported, chown: unsupported, fchmod: unsupported, fchown: unsupported,
		lchown: unsupported, link: unsupported, mkdir: unsupported, readdir: unsupported,
		readlink: unsupported, rmdir: unsupported, symlink: unsupported, utimes: unsupported,
	};
})();
