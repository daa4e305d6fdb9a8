/// Builds the XML returned by `org.freedesktop.DBus.Introspectable.Introspect`.
///
/// Format: the freedesktop introspection DTD, one `<interface>` per interface (standard ones included, as
/// GDBus and BlueZ do), and one empty `<node name="..."/>` per child so tools can walk the tree.
enum IntrospectionDocument {
    static func xml(for node: ObjectRegistry.Node) -> String {
        var lines = [
            #"<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN""#,
            #" "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">"#,
            "<node>",
        ]
        if node.exists {
            lines += standardInterfaces(isManagerRoot: node.isManagerRoot)
        } else {
            lines += introspectableInterface
        }
        for interface in node.interfaces ?? [] {
            lines += describe(interface)
        }
        for child in node.childNames {
            lines.append(#"  <node name="\#(escape(child))"/>"#)
        }
        lines.append("</node>")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func describe(_ interface: DBusInterface) -> [String] {
        var lines = [#"  <interface name="\#(escape(interface.name))">"#]
        for method in interface.methods {
            lines.append(#"    <method name="\#(escape(method.name))">"#)
            lines += method.inputs.map { argument($0, direction: "in") }
            lines += method.outputs.map { argument($0, direction: "out") }
            lines.append("    </method>")
        }
        for signal in interface.signals {
            lines.append(#"    <signal name="\#(escape(signal.name))">"#)
            lines += signal.arguments.map { argument($0, direction: nil) }
            lines.append("    </signal>")
        }
        for property in interface.properties {
            let access = property.isWritable ? "readwrite" : "read"
            let name = escape(property.name)
            let type = escape(property.signature.rawValue)
            lines.append(#"    <property name="\#(name)" type="\#(type)" access="\#(access)"/>"#)
        }
        lines.append("  </interface>")
        return lines
    }

    private static func argument(_ argument: DBusArgument, direction: String?) -> String {
        var attributes = ""
        if let name = argument.name { attributes += #" name="\#(escape(name))""# }
        attributes += #" type="\#(escape(argument.signature.rawValue))""#
        if let direction { attributes += #" direction="\#(direction)""# }
        return "      <arg\(attributes)/>"
    }

    private static let introspectableInterface = [
        #"  <interface name="org.freedesktop.DBus.Introspectable">"#,
        #"    <method name="Introspect">"#,
        #"      <arg name="xml_data" type="s" direction="out"/>"#,
        "    </method>",
        "  </interface>",
    ]

    private static func standardInterfaces(isManagerRoot: Bool) -> [String] {
        var lines = introspectableInterface
        lines += [
            #"  <interface name="org.freedesktop.DBus.Properties">"#,
            #"    <method name="Get">"#,
            #"      <arg name="interface_name" type="s" direction="in"/>"#,
            #"      <arg name="property_name" type="s" direction="in"/>"#,
            #"      <arg name="value" type="v" direction="out"/>"#,
            "    </method>",
            #"    <method name="GetAll">"#,
            #"      <arg name="interface_name" type="s" direction="in"/>"#,
            #"      <arg name="properties" type="a{sv}" direction="out"/>"#,
            "    </method>",
            #"    <method name="Set">"#,
            #"      <arg name="interface_name" type="s" direction="in"/>"#,
            #"      <arg name="property_name" type="s" direction="in"/>"#,
            #"      <arg name="value" type="v" direction="in"/>"#,
            "    </method>",
            #"    <signal name="PropertiesChanged">"#,
            #"      <arg name="interface_name" type="s"/>"#,
            #"      <arg name="changed_properties" type="a{sv}"/>"#,
            #"      <arg name="invalidated_properties" type="as"/>"#,
            "    </signal>",
            "  </interface>",
            #"  <interface name="org.freedesktop.DBus.Peer">"#,
            #"    <method name="Ping"/>"#,
            #"    <method name="GetMachineId">"#,
            #"      <arg name="machine_uuid" type="s" direction="out"/>"#,
            "    </method>",
            "  </interface>",
        ]
        if isManagerRoot {
            lines += [
                #"  <interface name="org.freedesktop.DBus.ObjectManager">"#,
                #"    <method name="GetManagedObjects">"#,
                #"      <arg name="objects" type="a{oa{sa{sv}}}" direction="out"/>"#,
                "    </method>",
                #"    <signal name="InterfacesAdded">"#,
                #"      <arg name="object" type="o"/>"#,
                #"      <arg name="interfaces" type="a{sa{sv}}"/>"#,
                "    </signal>",
                #"    <signal name="InterfacesRemoved">"#,
                #"      <arg name="object" type="o"/>"#,
                #"      <arg name="interfaces" type="as"/>"#,
                "    </signal>",
                "  </interface>",
            ]
        }
        return lines
    }

    /// XML attribute escaping; names are already restricted by D-Bus, argument names are free text.
    private static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
