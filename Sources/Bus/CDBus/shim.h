// CDBus: libdbus-1 as a Swift system library.
//
// Swift does not import libdbus's function-like and cast macros (DBUS_TYPE_STRING is `((int) 's')`), so the
// constants the Swift layer needs are re-declared here as typed `static const` values with a CDBUS_ prefix.
// The variadic dbus_message_append_args() cannot be called from Swift; the Swift layer uses DBusMessageIter.

#ifndef TETHER_CDBUS_SHIM_H
#define TETHER_CDBUS_SHIM_H

#include <dbus/dbus.h>
#include <sys/eventfd.h>

// Type codes (dbus-protocol.h).
static const int CDBUS_TYPE_INVALID = DBUS_TYPE_INVALID;
static const int CDBUS_TYPE_BYTE = DBUS_TYPE_BYTE;
static const int CDBUS_TYPE_BOOLEAN = DBUS_TYPE_BOOLEAN;
static const int CDBUS_TYPE_INT16 = DBUS_TYPE_INT16;
static const int CDBUS_TYPE_UINT16 = DBUS_TYPE_UINT16;
static const int CDBUS_TYPE_INT32 = DBUS_TYPE_INT32;
static const int CDBUS_TYPE_UINT32 = DBUS_TYPE_UINT32;
static const int CDBUS_TYPE_INT64 = DBUS_TYPE_INT64;
static const int CDBUS_TYPE_UINT64 = DBUS_TYPE_UINT64;
static const int CDBUS_TYPE_DOUBLE = DBUS_TYPE_DOUBLE;
static const int CDBUS_TYPE_STRING = DBUS_TYPE_STRING;
static const int CDBUS_TYPE_OBJECT_PATH = DBUS_TYPE_OBJECT_PATH;
static const int CDBUS_TYPE_SIGNATURE = DBUS_TYPE_SIGNATURE;
static const int CDBUS_TYPE_UNIX_FD = DBUS_TYPE_UNIX_FD;
static const int CDBUS_TYPE_ARRAY = DBUS_TYPE_ARRAY;
static const int CDBUS_TYPE_VARIANT = DBUS_TYPE_VARIANT;
static const int CDBUS_TYPE_STRUCT = DBUS_TYPE_STRUCT;
static const int CDBUS_TYPE_DICT_ENTRY = DBUS_TYPE_DICT_ENTRY;

// Protocol limits (dbus-protocol.h).
static const int CDBUS_MAXIMUM_SIGNATURE_LENGTH = DBUS_MAXIMUM_SIGNATURE_LENGTH;
static const int CDBUS_MAXIMUM_TYPE_RECURSION_DEPTH = DBUS_MAXIMUM_TYPE_RECURSION_DEPTH;
static const int CDBUS_MAXIMUM_MATCH_RULE_ARG_NUMBER = DBUS_MAXIMUM_MATCH_RULE_ARG_NUMBER;
static const int CDBUS_MAXIMUM_MESSAGE_UNIX_FDS = DBUS_MAXIMUM_MESSAGE_UNIX_FDS;

// Message types (dbus-protocol.h).
static const int CDBUS_MESSAGE_TYPE_INVALID = DBUS_MESSAGE_TYPE_INVALID;
static const int CDBUS_MESSAGE_TYPE_METHOD_CALL = DBUS_MESSAGE_TYPE_METHOD_CALL;
static const int CDBUS_MESSAGE_TYPE_METHOD_RETURN = DBUS_MESSAGE_TYPE_METHOD_RETURN;
static const int CDBUS_MESSAGE_TYPE_ERROR = DBUS_MESSAGE_TYPE_ERROR;
static const int CDBUS_MESSAGE_TYPE_SIGNAL = DBUS_MESSAGE_TYPE_SIGNAL;

// RequestName flags and replies (dbus-shared.h).
static const unsigned int CDBUS_NAME_FLAG_ALLOW_REPLACEMENT = DBUS_NAME_FLAG_ALLOW_REPLACEMENT;
static const unsigned int CDBUS_NAME_FLAG_REPLACE_EXISTING = DBUS_NAME_FLAG_REPLACE_EXISTING;
static const unsigned int CDBUS_NAME_FLAG_DO_NOT_QUEUE = DBUS_NAME_FLAG_DO_NOT_QUEUE;
static const unsigned int CDBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER = DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER;
static const unsigned int CDBUS_REQUEST_NAME_REPLY_IN_QUEUE = DBUS_REQUEST_NAME_REPLY_IN_QUEUE;
static const unsigned int CDBUS_REQUEST_NAME_REPLY_EXISTS = DBUS_REQUEST_NAME_REPLY_EXISTS;
static const unsigned int CDBUS_REQUEST_NAME_REPLY_ALREADY_OWNER = DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER;
static const unsigned int CDBUS_RELEASE_NAME_REPLY_RELEASED = DBUS_RELEASE_NAME_REPLY_RELEASED;
static const unsigned int CDBUS_RELEASE_NAME_REPLY_NON_EXISTENT = DBUS_RELEASE_NAME_REPLY_NON_EXISTENT;
static const unsigned int CDBUS_RELEASE_NAME_REPLY_NOT_OWNER = DBUS_RELEASE_NAME_REPLY_NOT_OWNER;

// Timeouts in milliseconds (dbus-protocol.h).
static const int CDBUS_TIMEOUT_INFINITE = DBUS_TIMEOUT_INFINITE;
static const int CDBUS_TIMEOUT_USE_DEFAULT = DBUS_TIMEOUT_USE_DEFAULT;

// The loop's wakeup descriptor: glibc's eventfd() is not exported by Swift's Glibc module.
static inline int cdbus_wakeup_fd_create(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

#endif
