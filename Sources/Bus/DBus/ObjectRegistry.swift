/// The tree of exported objects: which interfaces live at which path, and where object managers sit.
///
/// Plain data guarded by the object server's lock. Paths that are not exported but lie above exported ones
/// (`/org` above `/org/bluez/hci0`) still exist for introspection, so clients can walk the tree from `/`.
struct ObjectRegistry {
    private(set) var objects: [DBusObjectPath: [DBusInterface]] = [:]
    private(set) var managerRoots: Set<DBusObjectPath> = []

    /// What a method call at `path` can reach.
    struct Node {
        let path: DBusObjectPath
        /// Nil when nothing is exported at exactly this path.
        let interfaces: [DBusInterface]?
        let isManagerRoot: Bool
        /// Names of the next path element of everything exported below this path.
        let childNames: [String]

        /// An exported object or an object manager: something that answers more than Introspect.
        var exists: Bool { interfaces != nil || isManagerRoot }
    }

    func node(at path: DBusObjectPath) -> Node {
        Node(
            path: path,
            interfaces: objects[path],
            isManagerRoot: managerRoots.contains(path),
            childNames: childNames(of: path)
        )
    }

    /// Adds interfaces at `path`, creating the object if needed. Throws if one is already exported there.
    mutating func add(_ interfaces: [DBusInterface], at path: DBusObjectPath) throws {
        let existing = objects[path] ?? []
        for interface in interfaces where existing.contains(where: { $0.name == interface.name }) {
            throw DBusError(.invalidArgs, "Interface '\(interface.name)' is already exported at '\(path.rawValue)'")
        }
        objects[path] = existing + interfaces
    }

    /// Removes the object at `path` and returns the interfaces it had.
    mutating func removeObject(at path: DBusObjectPath) -> [DBusInterface]? {
        objects.removeValue(forKey: path)
    }

    /// Removes one interface; the object disappears with its last interface. Returns whether it existed.
    mutating func removeInterface(named name: String, at path: DBusObjectPath) -> Bool {
        guard var interfaces = objects[path], let index = interfaces.firstIndex(where: { $0.name == name }) else {
            return false
        }
        interfaces.remove(at: index)
        objects[path] = interfaces.isEmpty ? nil : interfaces
        return true
    }

    mutating func addManager(at root: DBusObjectPath) {
        managerRoots.insert(root)
    }

    mutating func removeManager(at root: DBusObjectPath) {
        managerRoots.remove(root)
    }

    /// The object manager responsible for `path`: the closest manager root strictly above it.
    func managerRoot(for path: DBusObjectPath) -> DBusObjectPath? {
        managerRoots.filter { $0.isAncestor(of: path) }.max { $0.rawValue.count < $1.rawValue.count }
    }

    /// The objects a manager reports, parents before children.
    func managedObjects(by root: DBusObjectPath) -> [(path: DBusObjectPath, interfaces: [DBusInterface])] {
        objects.filter { managerRoot(for: $0.key) == root }
            .sorted { $0.key < $1.key }
            .map { (path: $0.key, interfaces: $0.value) }
    }

    private func childNames(of path: DBusObjectPath) -> [String] {
        let depth = path.elements.count
        var names = Set<String>()
        for descendant in Set(objects.keys).union(managerRoots) where path.isAncestor(of: descendant) {
            let elements = descendant.elements
            if elements.count > depth {
                names.insert(String(elements[depth]))
            }
        }
        return names.sorted()
    }
}
