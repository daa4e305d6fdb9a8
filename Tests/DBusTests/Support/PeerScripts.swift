/// The Python programs the tests run as D-Bus peers (prefixed with `PythonPeer.common`).
enum PeerScripts {
    /// A service owning `com.example.Peer` with objects /peer, /peer/child and /elsewhere.
    /// Usage: service.py ADDRESS. It requests its name only after exporting, so the name's NameOwnerChanged
    /// tells a test that the service is ready. Exits on Quit() or after 120 s.
    static let service = #"""
        address = sys.argv[1]
        bus = dbus.bus.BusConnection(address)
        loop = GLib.MainLoop()
        PEER = 'com.example.Peer'
        OTHER = 'com.example.Other'

        class CustomError(dbus.exceptions.DBusException):
            _dbus_error_name = 'com.example.Error.Custom'

        class Peer(dbus.service.Object):
            def __init__(self, path):
                dbus.service.Object.__init__(self, bus, path)
                self.held = []

            @dbus.service.method(PEER, in_signature='v', out_signature='v')
            def Echo(self, value):
                return value

            @dbus.service.method(PEER, in_signature='v', out_signature='s')
            def Describe(self, value):
                return describe(value, top_variant=True)

            @dbus.service.method(PEER, in_signature='ybnqiuxtdsog', out_signature='s')
            def DescribeBasics(self, y, b, n, q, i, u, x, t, d, s, o, g):
                return ' '.join(describe(v) for v in (y, b, n, q, i, u, x, t, d, s, o, g))

            @dbus.service.method(PEER, in_signature='', out_signature='h')
            def MakeSocket(self):
                ours, theirs = socket.socketpair()
                ours.sendall(b'from-python')
                ours.close()
                fd = dbus.types.UnixFd(theirs)
                theirs.close()
                return fd

            @dbus.service.method(PEER, in_signature='h', out_signature='s')
            def ReadSocket(self, fd):
                raw = fd.take()
                try:
                    return os.read(raw, 100).decode()
                finally:
                    os.close(raw)

            @dbus.service.method(PEER, in_signature='', out_signature='', async_callbacks=('ok', 'err'))
            def NeverReply(self, ok, err):
                self.held.append((ok, err))

            @dbus.service.method(PEER, in_signature='', out_signature='')
            def Fail(self):
                raise CustomError('it went wrong on purpose')

            @dbus.service.method(PEER, in_signature='', out_signature='')
            def EmitMany(self):
                peer.Pinged('one')
                peer.OtherPinged('two')
                child.Pinged('three')
                elsewhere.Pinged('four')
                peer.Done()

            @dbus.service.method(PEER, in_signature='', out_signature='')
            def Quit(self):
                GLib.idle_add(loop.quit)

            @dbus.service.signal(PEER, signature='s')
            def Pinged(self, text):
                pass

            @dbus.service.signal(OTHER, signature='s')
            def OtherPinged(self, text):
                pass

            @dbus.service.signal(PEER, signature='')
            def Done(self):
                pass

        peer = Peer('/peer')
        child = Peer('/peer/child')
        elsewhere = Peer('/elsewhere')
        name = dbus.service.BusName(PEER, bus)
        GLib.timeout_add_seconds(120, loop.quit)
        loop.run()
        """#

    /// Calls a Tether object's Echo(s name, v value) -> v with every D-Bus type and checks each reply.
    /// Usage: echo.py ADDRESS DESTINATION. Prints "OK name" or "FAIL name: detail" per case.
    static let echoClient = #"""
        address, destination = sys.argv[1], sys.argv[2]
        bus = dbus.bus.BusConnection(address)
        echo = dbus.Interface(bus.get_object(destination, '/test'), 'com.example.Echo')

        cases = [
            ('byte', dbus.Byte(0xfe)),
            ('bool', dbus.Boolean(True)),
            ('int16', dbus.Int16(-32768)),
            ('uint16', dbus.UInt16(65535)),
            ('int32', dbus.Int32(-2147483648)),
            ('uint32', dbus.UInt32(4294967295)),
            ('int64', dbus.Int64(-9223372036854775808)),
            ('uint64', dbus.UInt64(18446744073709551615)),
            ('double', dbus.Double(-1.25e-300)),
            ('string', dbus.String('h\u00e9llo \u2713')),
            ('empty-string', dbus.String('')),
            ('objectpath', dbus.ObjectPath('/org/bluez/hci0')),
            ('signature', dbus.Signature('a{oa{sa{sv}}}')),
            ('array-string', dbus.Array(['a', 'b'], signature='s')),
            ('array-empty', dbus.Array([], signature='(ii)')),
            ('array-bytes', dbus.Array([dbus.Byte(0), dbus.Byte(255)], signature='y')),
            ('dict-sv', dbus.Dictionary({'a': dbus.UInt32(1, variant_level=1),
                                         'b': dbus.String('x', variant_level=1)}, signature='sv')),
            ('dict-qv', dbus.Dictionary({dbus.UInt16(0x004c): dbus.Array([dbus.Byte(1)], signature='y',
                                                                         variant_level=1)}, signature='qv')),
            ('dict-empty', dbus.Dictionary({}, signature='oa{sv}')),
            ('struct', dbus.Struct((dbus.Int32(1), dbus.String('s'), dbus.Array([], signature='u')),
                                   signature='isau')),
            ('variant-in-variant', dbus.Int32(7, variant_level=2)),
            ('array-of-variants', dbus.Array([dbus.Int16(1, variant_level=1),
                                              dbus.String('two', variant_level=1)], signature='v')),
            ('nested', dbus.Array([dbus.Dictionary({'k': dbus.Struct((dbus.Byte(1), dbus.Double(2.5)),
                                                                     signature='yd')}, signature='s(yd)')],
                                  signature='a{s(yd)}')),
        ]
        for name, value in cases:
            try:
                reply = echo.Echo(name, value)
                sent, got = describe(value, top_variant=True), describe(reply, top_variant=True)
                print(('OK %s' % name) if sent == got and reply == value else ('FAIL %s: sent %s got %s' % (name, sent, got)))
            except Exception as e:
                print('FAIL %s: %r' % (name, e))
        """#

    /// Exercises org.freedesktop.DBus.Properties on a Tether object and records one PropertiesChanged.
    /// Usage: properties.py ADDRESS DESTINATION. Prints one JSON object.
    static let propertiesClient = #"""
        address, destination = sys.argv[1], sys.argv[2]
        bus = dbus.bus.BusConnection(address)
        path, iface = '/org/example/thing', 'com.example.Thing'
        props = dbus.Interface(bus.get_object(destination, path), 'org.freedesktop.DBus.Properties')
        loop = GLib.MainLoop()
        out = {'changed': []}

        def on_changed(interface, changed, invalidated, path=None):
            out['changed'].append({'path': path, 'interface': str(interface), 'changed': describe(changed),
                                   'invalidated': [str(n) for n in invalidated]})
            loop.quit()

        bus.add_signal_receiver(on_changed, 'PropertiesChanged', 'org.freedesktop.DBus.Properties',
                                destination, path, path_keyword='path')
        out['get'] = describe(props.Get(iface, 'Name'), top_variant=True)
        out['getall'] = describe(props.GetAll(iface))
        out['readonly'] = error_name(lambda: props.Set(iface, 'Serial', dbus.UInt32(1, variant_level=1)))
        out['wrongtype'] = error_name(lambda: props.Set(iface, 'Name', dbus.UInt32(5, variant_level=1)))
        out['unknownproperty'] = error_name(lambda: props.Get(iface, 'Nope'))
        out['unknowninterface'] = error_name(lambda: props.Get('com.example.Nope', 'Name'))
        out['set'] = error_name(lambda: props.Set(iface, 'Name', dbus.String('renamed', variant_level=1)))
        out['after'] = describe(props.Get(iface, 'Name'), top_variant=True)
        GLib.timeout_add_seconds(10, loop.quit)
        loop.run()
        print(json.dumps(out))
        """#

    /// Watches a Tether ObjectManager at / for InterfacesAdded/Removed. Usage: monitor.py ADDRESS SENDER COUNT.
    /// Owns com.example.Monitor once its match rules are in place (the readiness signal); prints one line per
    /// signal and exits after COUNT signals (or 20 s).
    static let objectManagerMonitor = #"""
        address, sender, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
        bus = dbus.bus.BusConnection(address)
        loop = GLib.MainLoop()
        seen = []

        def record(line):
            print(line, flush=True)
            seen.append(line)
            if len(seen) >= count:
                loop.quit()

        bus.add_signal_receiver(lambda path, interfaces: record('added %s %s' % (path, describe(interfaces))),
                                'InterfacesAdded', 'org.freedesktop.DBus.ObjectManager', sender, '/')
        bus.add_signal_receiver(lambda path, names: record('removed %s %s' % (path, describe(names))),
                                'InterfacesRemoved', 'org.freedesktop.DBus.ObjectManager', sender, '/')
        name = dbus.service.BusName('com.example.Monitor', bus)
        GLib.timeout_add_seconds(20, loop.quit)
        loop.run()
        """#

    /// Calls GetManagedObjects on a Tether ObjectManager at /. Usage: managed.py ADDRESS DESTINATION.
    static let managedObjectsClient = #"""
        address, destination = sys.argv[1], sys.argv[2]
        bus = dbus.bus.BusConnection(address)
        manager = dbus.Interface(bus.get_object(destination, '/'), 'org.freedesktop.DBus.ObjectManager')
        print(describe(manager.GetManagedObjects()))
        """#

    /// Introspects Tether objects and parses the XML. Usage: introspect.py ADDRESS DESTINATION PATH...
    /// Prints one JSON object: path -> {interfaces: {name: {methods, signals, properties}}, children}.
    static let introspectionClient = #"""
        import xml.etree.ElementTree as ET
        address, destination, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
        bus = dbus.bus.BusConnection(address)
        out = {}
        for path in paths:
            xml = dbus.Interface(bus.get_object(destination, path), 'org.freedesktop.DBus.Introspectable').Introspect()
            root = ET.fromstring(str(xml))
            interfaces = {}
            for iface in root.findall('interface'):
                interfaces[iface.get('name')] = {
                    'methods': {m.get('name'): [[a.get('name'), a.get('type'), a.get('direction')]
                                                for a in m.findall('arg')] for m in iface.findall('method')},
                    'signals': {s.get('name'): [[a.get('name'), a.get('type')] for a in s.findall('arg')]
                                for s in iface.findall('signal')},
                    'properties': {p.get('name'): [p.get('type'), p.get('access')]
                                   for p in iface.findall('property')},
                }
            out[path] = {'interfaces': interfaces, 'children': [n.get('name') for n in root.findall('node')]}
        print(json.dumps(out))
        """#

    /// Calls a Tether object the wrong ways and prints the error names. Usage: errors.py ADDRESS DESTINATION.
    static let errorsClient = #"""
        address, destination = sys.argv[1], sys.argv[2]
        bus = dbus.bus.BusConnection(address)
        obj = bus.get_object(destination, '/test')
        out = {
            'unknownmethod': error_name(lambda: obj.Nope(dbus_interface='com.example.Echo')),
            'unknowninterface': error_name(lambda: obj.Echo('x', 1, dbus_interface='com.example.Nope')),
            'unknownobject': error_name(lambda: bus.get_object(destination, '/nothing/here').Echo(
                'x', 1, dbus_interface='com.example.Echo')),
            'invalidargs': error_name(lambda: bus.call_blocking(destination, '/test', 'com.example.Echo', 'Echo',
                                                               'i', [dbus.Int32(1)])),
            'thrown': error_name(lambda: obj.Refuse(dbus_interface='com.example.Echo')),
        }
        try:
            obj.Refuse(dbus_interface='com.example.Echo')
        except dbus.exceptions.DBusException as e:
            out['thrownmessage'] = e.get_dbus_message()
        print(json.dumps(out))
        """#

    /// Calls a Tether method returning a Unix fd and reads from it. Usage: acquire.py ADDRESS DESTINATION.
    static let acquireClient = #"""
        address, destination = sys.argv[1], sys.argv[2]
        bus = dbus.bus.BusConnection(address)
        fd, mtu = bus.get_object(destination, '/test').Acquire(dbus_interface='com.example.Echo')
        raw = fd.take()
        packets = [os.read(raw, 100).decode() for _ in range(2)]
        os.close(raw)
        print(json.dumps({'mtu': int(mtu), 'packets': packets}))
        """#
}
