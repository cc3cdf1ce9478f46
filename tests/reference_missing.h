// An outside reference that is missing (a Python environment a suite installs for itself, a
// Debian tool): a skip when a developer runs one suite by hand, a failure under `make test`,
// which installs them all and sets TRAINBENCH_REQUIRE_REFERENCES, because CTest counts a
// skipped suite as passed and a reference that silently went away would read as agreement.
#pragma once

#include <QByteArray>
#include <QtTest/QtTest>

#define TRAINBENCH_REFERENCE_MISSING(reason)                                                          \
    do {                                                                                              \
        const QByteArray why_ = QByteArray(reason);                                                   \
        if (qEnvironmentVariableIsSet("TRAINBENCH_REQUIRE_REFERENCES"))                               \
            QFAIL(QByteArray("missing reference under make test: " + why_).constData());              \
        QSKIP(why_.constData());                                                                      \
    } while (false)
