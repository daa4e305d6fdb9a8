import DBus
import Foundation
import TetherTestSupport

/// dbus-python scripts that act as D-Bus peers Tether does not implement.
///
/// They run under Debian's /usr/bin/python3 (package python3-dbus; `python3` on PATH may be another interpreter
/// without it). `describe()` renders a dbus-python value with its D-Bus types so a test can compare what
/// Python decoded with `PythonDescription.describe(_:)` on the Swift side.
enum PythonPeer {
    static let interpreter = "/usr/bin/python3"

    /// Runs `script` with `arguments`, to completion.
    static func run(_ script: String, _ arguments: [String], timeout: Duration = .seconds(30)) async throws
        -> ChildProcess.Result
    {
        try await start(script, arguments).finish(timeout: timeout)
    }

    /// Starts `script` and leaves it running (the caller finishes or kills it). The script goes on the command line
    /// (`python3 -c`), so there is no file to clean up; `sys.argv[1:]` are still the arguments.
    static func start(_ script: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(interpreter, ["-c", common + script] + arguments)
    }

    /// Shared by every script: imports, the GLib main loop, `describe()`.
    static let common = #"""
        import json, os, socket, sys
        import dbus, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib

        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)

        def describe(v, top_variant=False):
            level = getattr(v, 'variant_level', 0)
            if top_variant:
                level = max(level, 1)
            if isinstance(v, dbus.Array):
                body = 'a%s[%s]' % (v.signature, ','.join(describe(x) for x in v))
            elif isinstance(v, dbus.Dictionary):
                body = 'a{%s}{%s}' % (v.signature, ','.join('%s:%s' % (describe(k), describe(x)) for k, x in v.items()))
            elif isinstance(v, dbus.Struct):
                body = '(%s)' % ','.join(describe(x) for x in v)
            elif isinstance(v, dbus.Boolean):
                body = 'b:%s' % ('true' if v else 'false')
            elif isinstance(v, dbus.Byte):
                body = 'y:%d' % int(v)
            elif isinstance(v, dbus.Int16):
                body = 'n:%d' % int(v)
            elif isinstance(v, dbus.UInt16):
                body = 'q:%d' % int(v)
            elif isinstance(v, dbus.Int32):
                body = 'i:%d' % int(v)
            elif isinstance(v, dbus.UInt32):
                body = 'u:%d' % int(v)
            elif isinstance(v, dbus.Int64):
                body = 'x:%d' % int(v)
            elif isinstance(v, dbus.UInt64):
                body = 't:%d' % int(v)
            elif isinstance(v, dbus.Double):
                body = 'd:%r' % float(v)
            elif isinstance(v, dbus.ObjectPath):
                body = 'o:%s' % v
            elif isinstance(v, dbus.Signature):
                body = 'g:%s' % v
            elif isinstance(v, dbus.String):
                body = 's:%s' % json.dumps(str(v), ensure_ascii=False)
            elif isinstance(v, str):
                body = 's:%s' % json.dumps(v, ensure_ascii=False)
            elif isinstance(v, dbus.types.UnixFd):
                body = 'h'
            else:
                body = '?%s' % type(v).__name__
            return 'v' * level + body

        def error_name(call):
            try:
                call()
                return 'no error'
            except dbus.exceptions.DBusException as e:
                return e.get_dbus_name()

        """#
}

/// The Swift twin of the scripts' `describe()`: what dbus-python should decode for a value Tether sent.
/// (dbus-python folds a variant into `variant_level` on the value inside, hence the "v" prefix.)
func pythonDescription(of value: DBusValue) -> String {
    switch value {
    case .byte(let v): "y:\(v)"
    case .bool(let v): "b:\(v)"
    case .int16(let v): "n:\(v)"
    case .uint16(let v): "q:\(v)"
    case .int32(let v): "i:\(v)"
    case .uint32(let v): "u:\(v)"
    case .int64(let v): "x:\(v)"
    case .uint64(let v): "t:\(v)"
    case .double(let v): "d:\(v)"
    case .string(let v):
        "s:\"" + v.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    case .objectPath(let v): "o:\(v.rawValue)"
    case .signature(let v): "g:\(v.rawValue)"
    case .unixFD: "h"
    case .array(let signature, let elements):
        "a\(signature.rawValue)[" + elements.map(pythonDescription(of:)).joined(separator: ",") + "]"
    case .dictionary(let key, let value, let entries):
        "a{\(key.rawValue)\(value.rawValue)}{"
            + entries.map { pythonDescription(of: $0.key) + ":" + pythonDescription(of: $0.value) }
                .joined(separator: ",") + "}"
    case .structure(let fields): "(" + fields.map(pythonDescription(of:)).joined(separator: ",") + ")"
    case .variant(let inner): "v" + pythonDescription(of: inner)
    }
}
